"""``parity doctor``: what this environment can do. The frameworks' versions and whether they are a
supported pair, the devices each framework can run on, what the registry knows MindSpore cannot run
on the CPU, whether a browser for ``parity report``'s page is there, and what to install for what
is missing.

:mod:`.probe` gathers the facts (importing the frameworks, inside its functions, to ask them about
devices); :mod:`.cli` prints them. May import: the registry, the judge and :mod:`parity.errors`.
"""

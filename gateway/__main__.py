"""`python -m gateway` is `toolreel`."""

from gateway.cli import main

main()

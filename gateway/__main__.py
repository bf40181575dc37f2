"""`python -m gateway` is `toolreel`."""

from gateway.launch import main

main()

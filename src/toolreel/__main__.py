"""`python -m toolreel` is the `toolreel` command."""

from toolreel.gateway.launch import main

main()

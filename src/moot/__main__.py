from moot.cli import main

main()

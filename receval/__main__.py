from receval.cli import main

main()

"""The `harness` command line, on top of every wing: the commands (`commands`), the progress
display a person watches while a batch runs (`progress`), and the checks of the output
folders a user names (`folders`)."""

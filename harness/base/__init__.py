"""What every wing shares and that imports nothing else of the harness: the error tree
(`errors`), chat messages (`messages`), reading a user's file within limits (`files`) and
worker processes forked from this one (`forking`)."""

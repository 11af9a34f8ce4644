"""What every wing shares and that imports nothing else of the harness: the error tree
(`errors`), chat messages (`messages`), a parameter given as `name=value` (`params`), reading a
user's file within limits (`files`), worker processes forked from this one (`forking`), a folder
held for a command (`locking`), text from outside made safe to show on a terminal and to store
(`text`), JSON from outside read within bounds (`json_bounded`), and message lists that share
storage (`sequences`: a policy's history, a view, stored by reference)."""

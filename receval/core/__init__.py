"""What every part of receval stands on, importing nothing else of it: :mod:`.errors`
(one message per user error, exit status 2), :mod:`.io` (atomic writes),
:mod:`.outputs` (output flags never destroy inputs), :mod:`.progress` (warnings and
progress on stderr), :mod:`.numeric` (numbers in and out), :mod:`.secrets` (keys kept
out of messages and files), :mod:`.trust` (what a stored config or a command line may
make receval do), :mod:`.overrides` (command-line overrides read by Hydra's parser),
:mod:`.machine` (the facts a run was timed on)."""

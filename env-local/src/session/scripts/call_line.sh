@MARKER_VARIABLE@=@MARKER@ \. @DIR@/command.sh </dev/null >|@DIR@/out.@STDOUT_PIPE@ 2>|@DIR@/err.@STDERR_PIPE@

# bashtool session driver, sourced once by `bash --noprofile --norc -c`
# (see driver.rs). Rust replaced @DIR@ with the session directory, quoted,
# when it wrote this file; $__bt_seq and $__bt_restore come from the -c line.
#
# Why it is built this way (each point is a way a command broke it before):
# - Everything below is ONE compound command, parsed before anything runs:
#   aliases the user defines later (`alias builtin=…`, `alias while=…`)
#   never apply to it, and no name in it is looked up as an alias again.
# - Commands come from Rust on a FIFO that the loop opens for each read, not
#   on the shell's stdin: bash 5.2 crashes on `exec 3<&0` inside a `source`
#   while it reads its own commands from stdin. Statuses go to a second FIFO
#   that is opened for each record. So the shell holds no descriptor of
#   either while a command runs: nothing the command can write to or
#   clobber (`exec 10>f`), and no saved copy to forge a status through.
# - A status counts only with the call's nonce, which Rust writes after the
#   call line and the loop reads only once the command is over.
# - The two builtins called by name, `builtin` and `.`, are freed of
#   functions of those names after each command that may define names
#   (`c1`), in POSIX mode, where the special builtin `unset` comes before
#   functions. Everything else goes
#   through `builtin`. (`builtin source` cannot run the command: bash drops
#   the temporary environment, the per-call variables, after its first
#   command.)
# - A driver variable made readonly makes its next assignment abort the
#   shell; Rust then starts a new one from a snapshot without the poison.
# - The command runs at top level, inside this loop: `declare` makes
#   globals. A `continue` at its top level lands at the loop's start, a
#   `break` after the inner loop; both are caught ($__bt_running).
#
# Keep it short: the snapshot's `declare -f` lists the two functions, and
# bash writes every line of that output with its own write(2).
{
  # The shell's own stdin, stdout and stderr (`/dev/null`) are closed from
  # here on. Otherwise bash keeps saved copies of them at fds 10, 11, 12
  # while the command's redirections are in effect, and bash 5.2 shuffles
  # those into the command's own `exec 11>file`. With nothing to save,
  # undoing a redirection is a close. (Files the driver opens take these
  # numbers only for the moment of their redirection.) `exec` itself, not
  # `builtin exec`, whose redirections would be undone; first, before any
  # function can exist.
  exec 0<&- 1>&- 2>&-
  # The snapshot of the state to restore, if any, first: with aliases off
  # (the shell's default), so that a restored alias changes nothing here.
  [[ -z $__bt_restore ]] || builtin source "$__bt_restore" </dev/null >/dev/null 2>&1
  __bt_back= __bt_user_exit=${__bt_user_exit-}
  # Options last, so that no restored option cuts the restore short; `set
  # -e` and `set -u` are never restored (they apply to their own call).
  if [[ -n ${__bt_saved_shellopts-} ]]; then
    __bt_rest=$SHELLOPTS:
    while [[ -n $__bt_rest ]]; do
      __bt_option=${__bt_rest%%:*} __bt_rest=${__bt_rest#*:}
      [[ :$__bt_saved_shellopts: == *:"$__bt_option":* ]] || builtin set +o "$__bt_option" 2>/dev/null
    done
    __bt_rest=$__bt_saved_shellopts:
    while [[ -n $__bt_rest ]]; do
      __bt_option=${__bt_rest%%:*} __bt_rest=${__bt_rest#*:}
      case $__bt_option in
        errexit | nounset | '') ;;
        *) builtin set -o "$__bt_option" 2>/dev/null ;;
      esac
    done
    __bt_rest=$BASHOPTS:
    while [[ -n $__bt_rest ]]; do
      __bt_option=${__bt_rest%%:*} __bt_rest=${__bt_rest#*:}
      [[ :$__bt_saved_bashopts: == *:"$__bt_option":* ]] || builtin shopt -u "$__bt_option" 2>/dev/null
    done
    __bt_rest=$__bt_saved_bashopts:
    while [[ -n $__bt_rest ]]; do
      __bt_option=${__bt_rest%%:*} __bt_rest=${__bt_rest#*:}
      [[ -z $__bt_option ]] || builtin shopt -s "$__bt_option" 2>/dev/null
    done
  else
    builtin shopt -s expand_aliases
  fi
  builtin unset __bt_rest __bt_option __bt_saved_shellopts __bt_saved_bashopts __bt_restore
  # The first turn finishes the start (kind `s1`).
  __bt_running=s1
  while :; do
    while :; do
      if [[ -z $__bt_running ]]; then
        # One fixed-width line, `<kind> <stdout> <stderr> <marker> <key>`, each
        # field at a fixed offset (read there by substrings: splitting at
        # spaces costs ~6 µs more), in two read(2)s (`-N`; a line would take
        # one per byte): the kind, then the rest. Kinds: `c0`/`c1` run the
        # command with the line below, then save no snapshot / one;
        # `C0`/`C1` the same through call.sh (a working directory or
        # variables of its own); `w1` writes a snapshot now; `x1` exits (the
        # EXIT trap saves the state). Two reads because a shell killed while
        # blocked in a read can still take what that read asks for (the
        # kernel finishes it, then the signal ends the shell before it runs
        # another instruction): the rest left in the FIFO is how Rust tells
        # that the command never ran. `TMOUT=`: a command's TMOUT must not
        # time the wait for the next call out (only when set: a temporary
        # variable costs ~6 µs).
        if [[ -z ${TMOUT-} ]]; then
          { builtin read -r -N @KIND_WIDTH@ __bt_running && builtin read -r -N @FIELDS_WIDTH@ __bt_request; } <@DIR@/driver
        else
          { TMOUT= builtin read -r -N @KIND_WIDTH@ __bt_running && TMOUT= builtin read -r -N @FIELDS_WIDTH@ __bt_request; } <@DIR@/driver
        fi || [[ ${__bt_broken:?bashtool: the session driver cannot read} ]]
        # Only bashtool's requests run: each carries the session's key,
        # written here by Rust (no variable holds it).
        [[ ${__bt_request:@KEY_AT@:@KEY_WIDTH@} == @KEY@ ]] || { __bt_running=; continue; }
        if [[ $__bt_running == c0 ]]; then
          # The common call, straight through: it can change no state, so
          # there is no snapshot, no repair and no directory to go back to.
          # Its two steps (scripts/call_line.sh and report_status.sh, which
          # Rust writes into both places) are the general path's
          # below, without the ~6 tests the other kinds need (~6.5 µs a
          # call, measured).
          # A `continue` or `break` at the command's top level leaves this
          # block with $__bt_running still set, for the general path below.
          @CALL_LINE@
          __bt_status=$? __bt_running=
          [[ $- != *[eu]* ]] || builtin set +o errexit +o nounset
          @REPORT_STATUS@
          continue
        fi
        [[ $__bt_running != x1 ]] || builtin exit 0
        if [[ $__bt_running == c? ]]; then
          # (Only `c1` gets here: `c0` took the branch above.)
          # The command at top level, through `.` (not `builtin source`,
          # which drops the per-call variable after its first command),
          # with its own stdin, stdout and stderr. The command's
          # `continue` at top level lands at this loop's start, its
          # `break` after this loop: both come back here with
          # $__bt_running still set.
          @CALL_LINE@
        elif [[ $__bt_running == C? ]]; then
          # `[__bt_back=$PWD && \builtin cd -- DIR &&] VAR=x … \. COMMAND
          # <…`, every word quoted: it is parsed now, with the user's
          # aliases.
          builtin source @DIR@/call.sh
        fi
      fi
      # The save flag is what follows the kind's letter: `0` after a
      # command Rust saw can change no state (see state.rs), so it can have
      # defined no function either: no snapshot, no repair.
      __bt_status=$? __bt_kind=$__bt_running __bt_save_flag=${__bt_running#?} __bt_running=
      # Free `builtin` and `.` of functions of those names. In POSIX mode
      # the special builtin `unset` comes before any function; entering
      # POSIX mode through the variable needs no command at all.
      if [[ $__bt_save_flag == 0 ]]; then
        :
      elif [[ -o posix ]]; then
        unset -f builtin .
      else
        __bt_opts=$BASHOPTS
        POSIXLY_CORRECT=y; unset -f builtin .; unset POSIXLY_CORRECT
        # Leaving POSIX mode that way turns expand_aliases and shift_verbose
        # off and leaves interactive_comments, sourcepath and
        # inherit_errexit on (measured, bash 5.2; $BASHOPTS does not show
        # it): put back what differs, one `shopt` each (~5 µs).
        [[ :$__bt_opts: != *:expand_aliases:* ]] || builtin shopt -s expand_aliases
        [[ :$__bt_opts: != *:shift_verbose:* ]] || builtin shopt -s shift_verbose
        [[ :$__bt_opts: == *:interactive_comments:* ]] || builtin shopt -u interactive_comments
        [[ :$__bt_opts: == *:sourcepath:* ]] || builtin shopt -u sourcepath
        [[ :$__bt_opts: == *:inherit_errexit:* ]] || builtin shopt -u inherit_errexit
      fi
      [[ $- != *[eu]* ]] || builtin set +o errexit +o nounset
      if [[ $__bt_kind == [cC]? ]]; then
        [[ -z $__bt_back ]] || { builtin cd -- "$__bt_back" 2>/dev/null; __bt_back=; }
        # The stamp, `<id> <nonce>`, written by Rust after the call line and
        # read only now: the command could not see it. Fixed width (the id
        # in 20 digits, a space, the 16-digit nonce, no newline), in one
        # read(2) by `-N` (a line would take one per byte), and written back
        # as read; then the status record (scripts/report_status.sh).
        @REPORT_STATUS@
      fi
      if [[ $__bt_save_flag != 0 ]]; then
        # Defined again before each use: a command may have redefined them.
        __bt_save() {
          __bt_seq=$((__bt_seq + 1))
          { builtin declare -p; builtin declare -f; builtin alias -p; builtin printf 'builtin cd -- %q\n' "$PWD"; builtin umask -p; builtin printf '__bt_saved_shellopts=%q\n__bt_saved_bashopts=%q\n# bashtool snapshot complete %s\n' "$SHELLOPTS" "$BASHOPTS" "$__bt_seq"; } >|@DIR@/snapshot.$((__bt_seq % 2)) 2>/dev/null
        }
        # The EXIT trap saves the state an `exit` reached. A command that
        # set its own EXIT trap replaced ours: ours takes its text and runs
        # it first.
        __bt_exit() {
          [[ -z $__bt_user_exit ]] || builtin eval "$__bt_user_exit"
          __bt_save
        }
        __bt_trap="trap -- '\\__bt_exit' EXIT"$'\n'
        [[ $__bt_kind == s1 ]] || { builtin trap -p EXIT >|@DIR@/trap; IFS= builtin read -r -d '' __bt_trap <@DIR@/trap; } 2>/dev/null
        if [[ $__bt_trap != "trap -- '\\__bt_exit' EXIT"$'\n' ]]; then
          __bt_trap=${__bt_trap#trap -- }
          builtin eval "__bt_user_exit=${__bt_trap%$' EXIT\n'}"
        fi
        builtin trap '\__bt_exit' EXIT
        [[ $__bt_kind == s1 ]] || __bt_save
      fi
      case $__bt_kind in
        s1) builtin printf 'R\0' >>@DIR@/control 2>/dev/null ;;
        w1) builtin printf 'W\0' >>@DIR@/control 2>/dev/null ;;
      esac
    done
  done
}

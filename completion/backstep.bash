# bash completion for backstep(1): subcommands, each one's options, their
# values (--format, --method, --section, --suppress kinds), files, process
# ids (pid, record -p) and commands (after run's, validate's and record's
# "--"). Needs bash alone (not the bash-completion package). Installed as
# share/bash-completion/completions/backstep; tests/cli/docs_test.py checks
# that it offers every option each subcommand's --help names.

_backstep_options()
{
	local stack="-r --regs -n --no-symbols --no-cache --no-debuginfod --json --perf-map --jitdump --help"
	local samples="--format -o --output --pid --tid --comm --no-inline -n --no-symbols
		--kernel --no-kernel --no-debuginfod --help"
	case $1 in
	dump) echo "--rows --json --pc --section --debug-file --help" ;;
	pid) echo "$stack" ;;
	core) echo "--sysroot $stack" ;;
	run) echo "-f --follow $stack" ;;
	validate) echo "--only --from --method --max-frames --step-all --strict --driver --json
		-o --output --program-output -q --quiet --remote --qemu --cpu --sysroot
		--timeout --help" ;;
	check) echo "--json -v --verbose --stack --max-findings --baseline --suppress --help" ;;
	report) echo "$samples" ;;
	record) echo "-F --freq -d --duration -p $samples" ;;
	esac
}

_backstep_pids()
{
	local d pids=""
	for d in /proc/[0-9]*; do
		pids+="${d#/proc/} "
	done
	echo "$pids"
}

_backstep_files()
{
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -f -- "$1"))
}

_backstep()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local IFS=$' \t\n'
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "run pid core dump check validate report record help
			--help --version" -- "$cur"))
		return
	fi
	local sub=${COMP_WORDS[1]} i
	# After "--": the command to run, then its own arguments (files).
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			if ((i == COMP_CWORD - 1)); then
				compopt -o filenames 2>/dev/null
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				_backstep_files "$cur"
			fi
			return
		fi
	done
	case $prev in
	--section) COMPREPLY=($(compgen -W "eh debug" -- "$cur")); return ;;
	--method) COMPREPLY=($(compgen -W "cfi fp fast" -- "$cur")); return ;;
	--driver) COMPREPLY=($(compgen -W "inproc ptrace" -- "$cur")); return ;;
	--format) COMPREPLY=($(compgen -W "perf-script folded json speedscope svg" -- "$cur")); return ;;
	--suppress)
		COMPREPLY=($(compgen -W "gap overlap eh-frame-hdr outside-code discarded zero-length
			decode cfa-program entry-row state-stack no-unwind-tables toolchain-gap stack
			cannot-analyse" -- "$cur"))
		return
		;;
	--baseline | -o | --output | --program-output | --perf-map | --jitdump) _backstep_files "$cur"; return ;;
	--sysroot)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	-p | --pid) COMPREPLY=($(compgen -W "$(_backstep_pids)" -- "$cur")); return ;;
	--tid | --comm | --only | --from | --max-frames | --pc | -F | --freq | -d | --duration | \
		--remote | --cpu | --timeout)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_backstep_options "$sub") --" -- "$cur"))
		return
	fi
	case $sub in
	pid) COMPREPLY=($(compgen -W "$(_backstep_pids)" -- "$cur")) ;;
	dump | core | check | report) _backstep_files "$cur" ;;
	run | validate)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -c -- "$cur"))
		;;
	esac
}

complete -F _backstep backstep

#!/usr/bin/env bats
# What every program shares: -h (the man page's SYNOPSIS, checked in each
# program's suite), --help (the usage, then one line per option, every
# option of the usage among them), --version, and messages that name the
# program, not the path it was run by.

setup() {
	load test_helper/common-setup
	_common_setup
	PROGS="llm-import llm-pack-weights llm-split llm-verify-partition llm-lower llm-link llm-run llm-serve llm-quantize"
}

@test "--help prints the usage and a line for every option it names" {
	for p in $PROGS; do
		run -0 "$p" --help
		[ "${lines[0]}" = "$("$p" -h | head -1)" ]
		help=$output
		# every -x and --long of the usage is explained
		for o in $("$p" -h | grep -oE '(^|[[ |])--?[a-z][a-z0-9-]*' | sed 's/^[[ |]//' | sort -u); do
			[ "$o" = "-h" ] && continue
			if [[ "$o" == --* ]]; then
				grep -qE -- "(^| |\\[)$o( |,|\\]|$)" <<<"$(sed -n '/^$/,$p' <<<"$help")" || { echo "$p: $o not in --help"; false; }
			else
				# short options may be grouped in the usage ([-sv]): each letter
				for ((i = 1; i < ${#o}; i++)); do
					grep -qE -- "(^| |\\[)-${o:i:1}( |,|\\]|$)" <<<"$(sed -n '/^$/,$p' <<<"$help")" ||
						{ echo "$p: -${o:i:1} not in --help"; false; }
				done
			fi
		done
	done
}

@test "--version names the program, the project version and the LLVM it was built with" {
	for p in $PROGS; do
		run -0 "$p" --version
		assert_output --regexp "^$p \\(llm\\) [0-9]+\\.[0-9]+, built with MLIR/LLVM [0-9]+\\.[0-9]+"
	done
}

@test "a usage error names the program, not the path it was run by" {
	for p in $PROGS; do
		run -2 "$(command -v "$p")" --no-such-option
		assert_line --index 0 "$p: unrecognized option '--no-such-option'"
	done
}

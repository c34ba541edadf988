#!/usr/bin/env bats
# cmpf32, the comparison of float32 logit files that numeric tests use.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
}

# f32 FILE VALUES...: write little-endian float32 values.
f32() {
	local f=$1
	shift
	node -e 'const a = process.argv.slice(1).map(Number), b = Buffer.alloc(4 * a.length);
		a.forEach((x, i) => b.writeFloatLE(x, 4 * i)); process.stdout.write(b);' "$@" >"$f"
}

@test "cmpf32 -h prints the usage and exits 0" {
	run cmpf32 -h
	assert_success
	assert_output "usage: cmpf32 [-g] [-a abstol] [-c cols] [-r reltol] file1 file2"
}

@test "cmpf32 accepts equal files and reports zero difference" {
	f32 "$BATS_TEST_TMPDIR/a" 1 -2.5 3
	f32 "$BATS_TEST_TMPDIR/b" 1 -2.5 3
	run cmpf32 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	assert_output "n 3 max_abs 0 at 0 (1 vs 1) max_rel 0 scale 3"
}

@test "cmpf32 without a tolerance rejects any difference" {
	f32 "$BATS_TEST_TMPDIR/a" 1 2 3
	f32 "$BATS_TEST_TMPDIR/b" 1 2 3.0000002
	run --separate-stderr cmpf32 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	assert_output "n 3 max_abs 2.38418579e-07 at 2 (3 vs 3.00000024) max_rel 7.94728534e-08 scale 3.00000024"
	[[ "$stderr" == "cmpf32: $BATS_TEST_TMPDIR/b: max abs difference 2.38418579e-07 at 2 exceeds 0" ]]
}

@test "cmpf32 -a and -r set the absolute and relative tolerances" {
	f32 "$BATS_TEST_TMPDIR/a" 0.5 -4 2
	f32 "$BATS_TEST_TMPDIR/b" 0.5 -4.25 2
	run cmpf32 -a 0.25 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	run cmpf32 -a 0.2 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	# max_rel = 0.25 / 4.25
	run cmpf32 -r 0.06 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	assert_output --partial "max_rel 0.0588235294 scale 4.25"
	run cmpf32 -r 0.05 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	run cmpf32 -a 1 -r 0.05 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
}

@test "cmpf32 -c reports rows and -g requires the same argmax in every row" {
	f32 "$BATS_TEST_TMPDIR/a" 1 5 2 9 0 1
	f32 "$BATS_TEST_TMPDIR/b" 1 5 2 0 9 1.5
	run cmpf32 -a 10 -c 3 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	assert_output "n 6 max_abs 9 at 1,0 (9 vs 0) max_rel 1 scale 9 argmax_equal 1/2 first_differ 1 gap 8 vs 7.5"
	# the first row that differs, with the margins of its top two values
	f32 "$BATS_TEST_TMPDIR/a" 1 0 0 1 3 0.5
	f32 "$BATS_TEST_TMPDIR/b" 1 0 1 0.75 0 2
	run cmpf32 -a 10 -c 2 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	assert_output --partial "argmax_equal 1/3 first_differ 1 gap 1 vs 0.25"
	run --separate-stderr cmpf32 -g -a 10 -c 3 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	[[ "$stderr" == *"argmax differs in 1 of 2 rows" ]]
	run --separate-stderr cmpf32 -g -a 10 -c 4 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	[[ "$stderr" == *"6 values are not rows of 4" ]]
}

@test "cmpf32 rejects files of different sizes, odd sizes, non-finite values and missing files" {
	f32 "$BATS_TEST_TMPDIR/a" 1 2 3
	f32 "$BATS_TEST_TMPDIR/b" 1 2
	f32 "$BATS_TEST_TMPDIR/nan" 1 NaN 3
	f32 "$BATS_TEST_TMPDIR/inf" 1 Infinity 3
	printf 'abcde' >"$BATS_TEST_TMPDIR/odd"
	: >"$BATS_TEST_TMPDIR/empty"
	run --separate-stderr cmpf32 -a 1 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 1
	[ "$stderr" = "cmpf32: $BATS_TEST_TMPDIR/a: 3 values, but $BATS_TEST_TMPDIR/b has 2" ]
	run --separate-stderr cmpf32 -a 1 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/nan"
	assert_failure 1
	[[ "$stderr" == *"value 1 is not finite"* ]]
	run --separate-stderr cmpf32 -a 1 "$BATS_TEST_TMPDIR/inf" "$BATS_TEST_TMPDIR/inf"
	assert_failure 1
	run --separate-stderr cmpf32 "$BATS_TEST_TMPDIR/odd" "$BATS_TEST_TMPDIR/odd"
	assert_failure 1
	[[ "$stderr" == *"odd: size 5 is not a multiple of 4 bytes" ]]
	run --separate-stderr cmpf32 "$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/empty"
	assert_failure 1
	run --separate-stderr cmpf32 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/missing"
	assert_failure 1
	[[ "$stderr" == "cmpf32: $BATS_TEST_TMPDIR/missing: No such file or directory" ]]
}

@test "cmpf32 usage errors exit 2" {
	run --separate-stderr cmpf32 only-one
	assert_failure 2
	[[ "$stderr" == "usage: cmpf32"* ]]
	run --separate-stderr cmpf32 -a -1 x y
	assert_failure 2
	run --separate-stderr cmpf32 -a abc x y
	assert_failure 2
	run --separate-stderr cmpf32 -c 0 x y
	assert_failure 2
	run --separate-stderr cmpf32 -g x y
	assert_failure 2
	run --separate-stderr cmpf32 -Z x y
	assert_failure 2
}

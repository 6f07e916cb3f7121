//! Compile-time behaviour of the macros: what compiles (`ui/pass`) and every error the compiler
//! reports, with its message (`ui/fail/*.stderr`; regenerate with `TRYBUILD=overwrite`).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}

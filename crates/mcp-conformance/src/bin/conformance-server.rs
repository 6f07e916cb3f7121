//! The conformance fixture server (implemented with the server runtime).

fn main() {}

//! The conformance fixture client (implemented with the client runtime).

fn main() {}

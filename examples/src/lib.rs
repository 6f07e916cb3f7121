//! Helpers shared by the examples in `examples/` (see `examples/README.md`).

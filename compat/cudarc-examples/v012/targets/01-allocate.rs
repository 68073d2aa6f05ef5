// cudarc 0.12.1's `examples/01-allocate.rs`, as shipped. The target includes it rather than naming it,
// so that formatting this workspace never rewrites the upstream file.
include!("../examples/01-allocate.rs");

//! The seal of cudrv's element-type traits (`ops::Float`, `blas::GemmType`, `fuse::FuseType`):
//! they are implemented here, for these types, and nowhere else.

/// Implemented for the element types cudrv's kernels are built for; not nameable outside cudrv,
/// so no other crate can implement a trait that requires it.
pub trait Sealed {}
impl Sealed for f32 {}
impl Sealed for f64 {}
impl Sealed for half::f16 {}
impl Sealed for half::bf16 {}

//! The element types GEMM runs on.

use std::fmt::Debug;

use crate::memory::DeviceRepr;

/// Element types GEMM is built for: `f32`, `f64`, `half::f16`, `half::bf16`.
///
/// ```
/// use cudrv::blas::GemmType;
/// /// The `alpha` a generic caller passes: `T::Scalar` is f64 for f64, f32 otherwise.
/// fn one<T: GemmType>() -> T::Scalar {
///     T::Scalar::from(1u8)
/// }
/// assert_eq!(one::<half::f16>(), 1.0f32);
/// assert_eq!(one::<f64>(), 1.0f64);
/// ```
pub trait GemmType: DeviceRepr + Send + Sync + crate::blas::sealed::Sealed {
    /// The type of `alpha` and `beta`: `f64` for `f64`, `f32` for the others.
    type Scalar: Copy + Debug + PartialEq + Into<f64> + From<u8> + Send + Sync + 'static;
    /// The kernel-name part of the type.
    ///
    /// ```
    /// use cudrv::blas::GemmType;
    /// assert_eq!(<half::f16 as GemmType>::NAME, "f16");
    /// ```
    const NAME: &'static str;
    /// Whether the type runs on the tensor-core kernels (f32 only with [`MathMode::Tf32`](crate::blas::MathMode::Tf32)).
    ///
    /// ```
    /// use cudrv::blas::GemmType;
    /// assert!(<half::bf16 as GemmType>::TENSOR_CORES);
    /// assert!(!<f32 as GemmType>::TENSOR_CORES); // unless MathMode::Tf32
    /// ```
    const TENSOR_CORES: bool;
}
impl GemmType for f32 {
    type Scalar = f32;
    const NAME: &'static str = "f32";
    const TENSOR_CORES: bool = false;
}
impl GemmType for f64 {
    type Scalar = f64;
    const NAME: &'static str = "f64";
    const TENSOR_CORES: bool = true;
}
impl GemmType for half::f16 {
    type Scalar = f32;
    const NAME: &'static str = "f16";
    const TENSOR_CORES: bool = true;
}
impl GemmType for half::bf16 {
    type Scalar = f32;
    const NAME: &'static str = "bf16";
    const TENSOR_CORES: bool = true;
}

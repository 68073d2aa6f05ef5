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
pub trait GemmType: DeviceRepr + Send + Sync + as_gemv::AsGemv + crate::sealed::Sealed {
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

/// What a GEMM with one row or column needs to run as a GEMV (src/blas/gemm/vector.rs): sealed,
/// implemented for the four GEMM types, each of which is also a GEMV type.
pub(crate) mod as_gemv {
    use crate::blas::{gemv, Transpose};
    use crate::error::Result;
    use crate::memory::{DeviceSlice, DeviceSliceMut};

    pub trait AsGemv: Sized {
        /// `x` as a GEMV scalar of this type, if it is exactly representable (the 16-bit GEMVs
        /// take alpha and beta in the element type).
        fn gemv_scalar(x: f64) -> Option<Self>;

        /// [`gemv`] on this type.
        #[allow(clippy::too_many_arguments)]
        fn run_gemv(
            trans: Transpose,
            rows: usize,
            cols: usize,
            alpha: Self,
            m: &impl DeviceSlice<Self>,
            ld: usize,
            x: &impl DeviceSlice<Self>,
            incx: isize,
            beta: Self,
            y: &mut impl DeviceSliceMut<Self>,
            incy: isize,
        ) -> Result<()>;
    }

    macro_rules! as_gemv {
        ($t:ty, $from:expr) => {
            impl AsGemv for $t {
                fn gemv_scalar(x: f64) -> Option<Self> {
                    let v: $t = $from(x);
                    (f64::from(v) == x).then_some(v)
                }

                fn run_gemv(
                    trans: Transpose,
                    rows: usize,
                    cols: usize,
                    alpha: Self,
                    m: &impl DeviceSlice<Self>,
                    ld: usize,
                    x: &impl DeviceSlice<Self>,
                    incx: isize,
                    beta: Self,
                    y: &mut impl DeviceSliceMut<Self>,
                    incy: isize,
                ) -> Result<()> {
                    gemv(trans, rows, cols, alpha, m, ld, x, incx, beta, y, incy)
                }
            }
        };
    }
    as_gemv!(f32, |x: f64| x as f32);
    as_gemv!(f64, |x: f64| x);
    as_gemv!(half::f16, half::f16::from_f64);
    as_gemv!(half::bf16, half::bf16::from_f64);
}

//! A GEMM with one row or one column (`m == 1` or `n == 1`: a decode step's single token, a
//! matrix-vector product written as a GEMM) runs as a GEMV: the GEMM kernels tile m and n, so a
//! product with one of them 1 leaves almost every multiprocessor idle, while the GEMV kernels
//! split the long dimensions across the whole GPU.

use super::builder::Gemm;
use super::GemmType;
use crate::blas::{Activation, Layout, Transpose};
use crate::error::Result;
use crate::memory::{DeviceSlice, DeviceSliceMut};

/// `y = alpha op(M) x + beta y` for a GEMM whose column-major view has `m == 1` or `n == 1`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct VectorRoute<T> {
    /// op(M) for the GEMV.
    pub trans: Transpose,
    /// M's stored rows and columns, and its leading dimension.
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
    /// Whether M is the caller's A (else B; x is then the other operand).
    pub matrix_is_a: bool,
    /// The increments of x (in the operand that is not M) and of y (in C).
    pub incx: isize,
    pub incy: isize,
    /// The GEMM's alpha and beta as the GEMV's scalars (exact in T).
    pub alpha: T,
    pub beta: T,
}

impl<T> VectorRoute<T> {
    /// The GEMV family that runs it, for `Gemm::kernel_name`: `gemv_n_<t>` or `gemv_t_<t>`.
    pub(crate) fn name(&self, type_name: &str) -> String {
        let op = if self.trans == Transpose::N { 'n' } else { 't' };
        format!("gemv_{op}_{type_name}")
    }
}

/// The GEMV form of `g`, when it has one and nothing asks for the GEMM kernels: one product
/// (batch 1), k >= 1 (with k = 0 a GEMV would leave C unscaled), no bias or activation, every
/// knob automatic, and alpha and beta exact in T (a 16-bit GEMV takes its scalars in T).
/// `lds` are the resolved leading dimensions of A, B, C.
pub(crate) fn route<T: GemmType, S: Copy + Into<f64>>(g: &Gemm<S>, lds: [usize; 3]) -> Option<VectorRoute<T>> {
    let (m, n, k) = (g.m, g.n, g.k);
    let knobs_auto = g.kernel == super::Kernel::Auto && g.tile == super::Tile::Auto && g.split == super::SplitK::Auto;
    if g.batch != 1 || k == 0 || !(m == 1 || n == 1) || g.activation != Activation::None || !knobs_auto {
        return None;
    }
    let (alpha, beta) = (T::gemv_scalar(g.alpha.into())?, T::gemv_scalar(g.beta.into())?);
    // The column-major view: a row-major C = op(A) op(B) is the column-major
    // C^T = op(B)^T op(A)^T, i.e. (op(B), op(A), n, m) on (B, A).
    let row_major = g.layout == Layout::RowMajor;
    let (ta, tb, m, n, lda, ldb) = if row_major {
        (g.trans_b, g.trans_a, n, m, lds[1], lds[0])
    } else {
        (g.trans_a, g.trans_b, m, n, lds[0], lds[1])
    };
    let ldc = lds[2];
    let r = if n == 1 {
        // c (m) = op(A) b: A is the matrix, b the column of op(B).
        let (trans, rows, cols) = match ta {
            Transpose::N => (Transpose::N, m, k),
            Transpose::T => (Transpose::T, k, m),
        };
        let incx = if tb == Transpose::N { 1 } else { ldb };
        VectorRoute {
            trans,
            rows,
            cols,
            ld: lda,
            matrix_is_a: true,
            incx: incx as isize,
            incy: 1,
            alpha,
            beta,
        }
    } else {
        // c^T (n) = op(B)^T a^T: B is the matrix, a the row of op(A); C's row at ldc.
        let (trans, rows, cols) = match tb {
            Transpose::N => (Transpose::T, k, n),
            Transpose::T => (Transpose::N, n, k),
        };
        let incx = if ta == Transpose::N { lda } else { 1 };
        VectorRoute {
            trans,
            rows,
            cols,
            ld: ldb,
            matrix_is_a: false,
            incx: incx as isize,
            incy: ldc as isize,
            alpha,
            beta,
        }
    };
    // In the row-major case the view's A is the caller's B.
    Some(VectorRoute {
        matrix_is_a: r.matrix_is_a != row_major,
        ..r
    })
}

/// Runs `r` (from [`route`]) on the caller's operands.
pub(crate) fn run<T: GemmType>(
    r: &VectorRoute<T>,
    a: &impl DeviceSlice<T>,
    b: &impl DeviceSlice<T>,
    c: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    if r.matrix_is_a {
        T::run_gemv(r.trans, r.rows, r.cols, r.alpha, a, r.ld, b, r.incx, r.beta, c, r.incy)
    } else {
        T::run_gemv(r.trans, r.rows, r.cols, r.alpha, b, r.ld, a, r.incx, r.beta, c, r.incy)
    }
}

//! Fused kernels: a chain of elementwise maps, broadcasts and reductions described in Rust, made
//! into one CUDA kernel, compiled through [`crate::nvrtc`] (and kept in the kernel cache), and
//! launched with checked arguments.
//!
//! A fusion works over a `rows x cols` grid of elements (a vector is one row). Its values have a
//! [`Shape`]: a [`Shape::Matrix`] has an element per `(row, col)`, a [`Shape::Row`] one per column
//! (broadcast down the rows), a [`Shape::Col`] one per row (broadcast along the row), a
//! [`Shape::Scalar`] one in all. Arithmetic between values broadcasts; [`Expr::sum_rows`] and its
//! kin reduce each row to a per-row value that later expressions may use (a softmax, a GEMV);
//! [`Fusion::sum`] and its kin reduce everything to one number, written to an output of length 1.
//!
//! Everything is computed in `f32` (in `f64` for an `f64` fusion) and stored in the fusion's
//! element type; reductions are deterministic (fixed order), so a launch repeated on the same
//! inputs gives the same bits.
//!
//! ```no_run
//! use cudrv::fuse::{DType, Fusion};
//! use cudrv::{DeviceBuffer, DeviceSlice};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! // KL divergence of p from q, then its sum: one kernel, no intermediate buffer.
//! let mut f = Fusion::new("kl_sum", DType::F32);
//! let (p, q) = (f.input("p"), f.input("q"));
//! f.sum("kl", &p * (&p / &q).ln());
//! let kernel = f.compile(&ctx)?;
//! let p = DeviceBuffer::from_slice(&stream, &[0.25f32, 0.75])?;
//! let q = DeviceBuffer::from_slice(&stream, &[0.5f32, 0.5])?;
//! let mut kl = DeviceBuffer::<f32>::zeroed(&stream, 1)?;
//! kernel.launch(&stream, 1, 2).input("p", &p).input("q", &q).output("kl", &mut kl).run()?;
//! assert!((kl.to_vec()?[0] - 0.1308).abs() < 1e-3);
//! # Ok::<(), cudrv::Error>(())
//! ```

mod binding;
mod codegen;
mod emit;
mod expr;
mod kernel;

pub use emit::emit_ptx;

pub(crate) use binding::{Access, Binding};
pub(crate) use codegen::{namespace as namespace_source, Layout};
pub use expr::{Expr, Shape};
pub(crate) use kernel::compile_module;
pub use kernel::{FusedKernel, FusedLaunch};

use crate::error::{Error, Result};
use expr::{Node, ReduceOp};

/// The element type of a fusion's buffers.
///
/// ```
/// use cudrv::fuse::DType;
/// assert_eq!(DType::F16.size(), 2);
/// assert_eq!(DType::F64.name(), "f64");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `f32`, computed in `f32`.
    F32,
    /// `f64`, computed in `f64`.
    F64,
    /// `half::f16`, computed in `f32`.
    F16,
    /// `half::bf16`, computed in `f32`.
    BF16,
}

impl DType {
    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(cudrv::fuse::DType::BF16.size(), 2);
    /// ```
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// The Rust name of the type.
    ///
    /// ```
    /// assert_eq!(cudrv::fuse::DType::F16.name(), "f16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }
}

/// An element type a fused kernel's buffers may hold.
///
/// ```
/// use cudrv::fuse::{DType, FuseType};
/// assert_eq!(<half::bf16 as FuseType>::DTYPE, DType::BF16);
/// ```
pub trait FuseType: crate::memory::DeviceRepr + crate::sealed::Sealed {
    /// The matching [`DType`].
    const DTYPE: DType;
}
impl FuseType for f32 {
    const DTYPE: DType = DType::F32;
}
impl FuseType for f64 {
    const DTYPE: DType = DType::F64;
}
impl FuseType for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl FuseType for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
/// What an output receives.
#[derive(Clone, Debug)]
pub(crate) enum OutputKind {
    /// The value of the expression at every point of its shape.
    Store,
    /// One number: the expression reduced over every point of its shape.
    Reduce(ReduceOp),
}

/// One named output of a fusion.
#[derive(Clone, Debug)]
pub(crate) struct Output {
    pub(crate) name: String,
    pub(crate) expr: Expr,
    pub(crate) kind: OutputKind,
}

/// A named input: a buffer of the given shape, or a scalar passed at launch.
#[derive(Clone, Debug)]
pub(crate) struct Input {
    pub(crate) name: String,
    pub(crate) shape: Shape,
}

/// The description of a fused kernel: its inputs, the expressions over them, and its outputs.
///
/// ```
/// use cudrv::fuse::{DType, Fusion};
/// // Row-wise softmax of a matrix, in one kernel.
/// let mut f = Fusion::new("softmax", DType::F32);
/// let x = f.input("x");
/// let e = (&x - x.max_rows()).exp();
/// f.output("y", &e / e.sum_rows());
/// assert!(f.cuda_source().contains("softmax"));
/// ```
#[derive(Clone, Debug)]
pub struct Fusion {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    pub(crate) inputs: Vec<Input>,
    pub(crate) outputs: Vec<Output>,
    /// The first error made while describing (reported by `compile` and `cuda_source`'s callers).
    pub(crate) error: Option<String>,
}

impl Fusion {
    /// An empty fusion; `name` becomes the kernel's name (letters, digits and `_`).
    ///
    /// ```
    /// let f = cudrv::fuse::Fusion::new("step", cudrv::fuse::DType::F16);
    /// assert_eq!(f.name(), "step");
    /// ```
    pub fn new(name: &str, dtype: DType) -> Self {
        let error = (!valid_ident(name)).then(|| {
            format!("fusion name {name:?} must be a C identifier (letters, digits, '_'; not starting with a digit)")
        });
        Fusion {
            name: name.into(),
            dtype,
            inputs: Vec::new(),
            outputs: Vec::new(),
            error,
        }
    }

    /// The kernel's name.
    ///
    /// ```
    /// assert_eq!(cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32).name(), "k");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the fusion (its kernel's name): the same chain under another name, e.g. in
    /// several types inside one executor.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("step", DType::F32);
    /// f.set_name("step_f32");
    /// assert_eq!(f.name(), "step_f32");
    /// ```
    pub fn set_name(&mut self, name: &str) {
        if !valid_ident(name) {
            self.note(format!("fusion name {name:?} must be a C identifier"));
        }
        self.name = name.into();
    }

    /// The element type.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// assert_eq!(Fusion::new("k", DType::F64).dtype(), DType::F64);
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// A `rows x cols` input buffer (a vector of `cols` when `rows` is 1).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion, Shape};
    /// let mut f = Fusion::new("k", DType::F32);
    /// assert_eq!(f.input("x").shape(), Shape::Matrix);
    /// ```
    pub fn input(&mut self, name: &str) -> Expr {
        self.add_input(name, Shape::Matrix)
    }

    /// An input of `cols` elements, the same for every row.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion, Shape};
    /// let mut f = Fusion::new("k", DType::F32);
    /// assert_eq!(f.row_input("bias").shape(), Shape::Row);
    /// ```
    pub fn row_input(&mut self, name: &str) -> Expr {
        self.add_input(name, Shape::Row)
    }

    /// An input of `rows` elements, one per row.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion, Shape};
    /// let mut f = Fusion::new("k", DType::F32);
    /// assert_eq!(f.col_input("scale").shape(), Shape::Col);
    /// ```
    pub fn col_input(&mut self, name: &str) -> Expr {
        self.add_input(name, Shape::Col)
    }

    /// A number given at each launch ([`FusedLaunch::scalar`]).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion, Shape};
    /// let mut f = Fusion::new("k", DType::F32);
    /// assert_eq!(f.scalar("lr").shape(), Shape::Scalar);
    /// ```
    pub fn scalar(&mut self, name: &str) -> Expr {
        self.add_input(name, Shape::Scalar)
    }

    /// Writes `value` at every point of its shape to the output buffer `name` (`rows x cols`,
    /// `cols` or `rows` elements, or 1 for a scalar).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("relu_bias", DType::F32);
    /// let (x, b) = (f.input("x"), f.row_input("b"));
    /// f.output("y", (x + b).relu());
    /// ```
    pub fn output(&mut self, name: &str, value: Expr) {
        self.add_output(name, value, OutputKind::Store);
    }

    /// Writes the sum of `value` over every point of its shape to `name` (one element).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("sq_norm", DType::F64);
    /// let x = f.input("x");
    /// f.sum("n2", &x * &x);
    /// ```
    pub fn sum(&mut self, name: &str, value: Expr) {
        self.add_output(name, value, OutputKind::Reduce(ReduceOp::Sum));
    }

    /// Writes the largest value of `value` to `name` (one element; NaN if any is NaN).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("amax", DType::F32);
    /// let x = f.input("x");
    /// f.max("m", x.abs());
    /// ```
    pub fn max(&mut self, name: &str, value: Expr) {
        self.add_output(name, value, OutputKind::Reduce(ReduceOp::Max));
    }

    /// Writes the smallest value of `value` to `name` (one element; NaN if any is NaN).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("lo", DType::F32);
    /// let x = f.input("x");
    /// f.min("m", x);
    /// ```
    pub fn min(&mut self, name: &str, value: Expr) {
        self.add_output(name, value, OutputKind::Reduce(ReduceOp::Min));
    }

    /// The CUDA C++ source of the kernel (what [`Fusion::compile`] compiles and
    /// [`emit_ptx`] writes), or the first mistake in the description.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let mut f = Fusion::new("twice", DType::F32);
    /// let x = f.input("x");
    /// f.output("y", x * 2.0);
    /// assert!(f.source().unwrap().contains("extern \"C\" __global__"));
    /// ```
    pub fn source(&self) -> Result<String> {
        self.check()?;
        Ok(codegen::generate(self))
    }

    /// [`Fusion::source`], with a mistake written as a `#error` line (so that compiling it
    /// reports the mistake).
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion};
    /// let f = Fusion::new("empty", DType::F32);
    /// assert!(f.cuda_source().contains("#error"));
    /// ```
    pub fn cuda_source(&self) -> String {
        match self.source() {
            Ok(s) => s,
            Err(e) => format!("#error \"{}\"\n", e.to_string().replace('"', "'")),
        }
    }

    /// Checks the description: a name, at least one output, distinct names, no reduction of a
    /// per-row value along its row, every expression from this fusion's inputs.
    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(format!("fusion `{}`: {m}", self.name)));
        if let Some(e) = &self.error {
            return bad(e.clone());
        }
        if self.outputs.is_empty() {
            return bad("it has no output; add one with output, sum, max or min".into());
        }
        for o in &self.outputs {
            o.expr
                .check_inputs(&self.inputs)
                .or_else(|m| bad(format!("output `{}`: {m}", o.name)))?;
        }
        Ok(())
    }

    fn add_input(&mut self, name: &str, shape: Shape) -> Expr {
        self.claim(name);
        self.inputs.push(Input {
            name: name.into(),
            shape,
        });
        Expr::new(Node::Input {
            index: self.inputs.len() - 1,
            name: name.into(),
            shape,
        })
    }

    fn add_output(&mut self, name: &str, expr: Expr, kind: OutputKind) {
        self.claim(name);
        if let Some(e) = expr.error() {
            self.note(format!("output `{name}`: {e}"));
        }
        self.outputs.push(Output {
            name: name.into(),
            expr,
            kind,
        });
    }

    /// Records a mistake in a name (reported when the fusion is compiled).
    fn claim(&mut self, name: &str) {
        if !valid_ident(name) {
            self.note(format!("name {name:?} must be a C identifier"));
        } else if self.inputs.iter().any(|i| i.name == name) || self.outputs.iter().any(|o| o.name == name) {
            self.note(format!("the name `{name}` is used twice"));
        }
    }

    fn note(&mut self, message: String) {
        self.error.get_or_insert(message);
    }
}

fn valid_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

//! Expressions of a fusion: a tree of inputs, constants, elementwise operations and row
//! reductions, with its shape worked out as it is built.

use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::sync::Arc;

use super::Input;

/// Where a value lives in the `rows x cols` grid of a fusion.
///
/// ```
/// use cudrv::fuse::Shape;
/// assert_eq!(Shape::Row.broadcast(Shape::Col), Shape::Matrix);
/// assert_eq!(Shape::Scalar.broadcast(Shape::Col), Shape::Col);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One value per element.
    Matrix,
    /// One value per column, the same in every row.
    Row,
    /// One value per row, the same along the row.
    Col,
    /// One value.
    Scalar,
}

impl Shape {
    /// The shape of an operation between values of shapes `self` and `other`.
    ///
    /// ```
    /// use cudrv::fuse::Shape;
    /// assert_eq!(Shape::Matrix.broadcast(Shape::Scalar), Shape::Matrix);
    /// ```
    pub fn broadcast(self, other: Shape) -> Shape {
        use Shape::*;
        match (self, other) {
            (Scalar, s) | (s, Scalar) => s,
            (a, b) if a == b => a,
            _ => Matrix,
        }
    }
}

/// Elementwise functions of one value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Unary {
    Neg,
    Abs,
    Exp,
    Ln,
    Sqrt,
    Tanh,
    Sigmoid,
    Relu,
    Recip,
}

/// Elementwise functions of two values; comparisons give 1 or 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
}

/// How a reduction combines values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ReduceOp {
    Sum,
    Max,
    Min,
}

#[derive(Debug)]
pub(crate) enum Node {
    Input {
        index: usize,
        name: String,
        shape: Shape,
    },
    Const(f64),
    Unary(Unary, Expr),
    Binary(Binary, Expr, Expr),
    Select(Expr, Expr, Expr),
    /// A row's values reduced to one (a `Col` value).
    RowReduce(ReduceOp, Expr),
    /// The k-th smallest of a row's values (a `Col` value); k is a scalar value.
    RowKth(Expr, Expr),
}

pub(crate) struct Inner {
    pub(crate) node: Node,
    pub(crate) shape: Shape,
    /// The first mistake in this tree, if any (reported when the fusion is checked).
    error: Option<String>,
}

/// A value of a fusion: an input, a constant, or an operation on values. Cheap to clone (shared
/// tree); arithmetic works on values and references and with `f64` constants.
///
/// ```
/// use cudrv::fuse::{DType, Fusion};
/// let mut f = Fusion::new("k", DType::F32);
/// let (x, y) = (f.input("x"), f.input("y"));
/// let z = (&x - &y).abs().max(0.5) * 2.0 + 1.0;
/// f.output("z", z);
/// ```
#[derive(Clone)]
pub struct Expr(pub(crate) Arc<Inner>);

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0.node)
    }
}

impl From<f64> for Expr {
    fn from(v: f64) -> Self {
        Expr::new(Node::Const(v))
    }
}

impl Expr {
    pub(crate) fn new(node: Node) -> Expr {
        let (shape, error) = match &node {
            Node::Input { shape, .. } => (*shape, None),
            Node::Const(_) => (Shape::Scalar, None),
            Node::Unary(_, a) => (a.shape(), a.error()),
            Node::Binary(_, a, b) => (a.shape().broadcast(b.shape()), a.error().or_else(|| b.error())),
            Node::Select(c, a, b) => (
                c.shape().broadcast(a.shape()).broadcast(b.shape()),
                c.error().or_else(|| a.error()).or_else(|| b.error()),
            ),
            Node::RowReduce(_, a) => {
                let error = match a.shape() {
                    Shape::Matrix | Shape::Row => a.error(),
                    other => Some(format!(
                        "a row reduction needs a value that varies along the row (a matrix or row \
                         value), not a {other:?} value"
                    )),
                };
                (Shape::Col, error)
            }
            Node::RowKth(a, k) => {
                let error = match (a.shape(), k.shape()) {
                    (Shape::Matrix | Shape::Row, Shape::Scalar) => a.error().or_else(|| k.error()),
                    (Shape::Matrix | Shape::Row, other) => Some(format!(
                        "the k of a row's k-th smallest value must be a scalar (a constant or a scalar input), \
                         not a {other:?} value"
                    )),
                    (other, _) => Some(format!(
                        "a row's k-th smallest value needs a value that varies along the row (a matrix or row \
                         value), not a {other:?} value"
                    )),
                };
                (Shape::Col, error)
            }
        };
        Expr(Arc::new(Inner { node, shape, error }))
    }

    pub(crate) fn node(&self) -> &Node {
        &self.0.node
    }

    pub(crate) fn error(&self) -> Option<String> {
        self.0.error.clone()
    }

    /// Where the value lives.
    ///
    /// ```
    /// use cudrv::fuse::{DType, Fusion, Shape};
    /// let mut f = Fusion::new("k", DType::F32);
    /// let x = f.input("x");
    /// assert_eq!(x.sum_rows().shape(), Shape::Col);
    /// ```
    pub fn shape(&self) -> Shape {
        self.0.shape
    }

    /// A constant.
    ///
    /// ```
    /// use cudrv::fuse::{Expr, Shape};
    /// assert_eq!(Expr::constant(2.5).shape(), Shape::Scalar);
    /// ```
    pub fn constant(v: f64) -> Expr {
        Expr::from(v)
    }

    fn unary(&self, op: Unary) -> Expr {
        Expr::new(Node::Unary(op, self.clone()))
    }

    fn binary(&self, op: Binary, other: impl Into<Expr>) -> Expr {
        Expr::new(Node::Binary(op, self.clone(), other.into()))
    }

    /// `|x|`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").abs();
    /// # let _ = y;
    /// ```
    pub fn abs(&self) -> Expr {
        self.unary(Unary::Abs)
    }
    /// `e^x`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").exp();
    /// # let _ = y;
    /// ```
    pub fn exp(&self) -> Expr {
        self.unary(Unary::Exp)
    }
    /// The natural logarithm.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").ln();
    /// # let _ = y;
    /// ```
    pub fn ln(&self) -> Expr {
        self.unary(Unary::Ln)
    }
    /// The square root.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").sqrt();
    /// # let _ = y;
    /// ```
    pub fn sqrt(&self) -> Expr {
        self.unary(Unary::Sqrt)
    }
    /// The hyperbolic tangent.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").tanh();
    /// # let _ = y;
    /// ```
    pub fn tanh(&self) -> Expr {
        self.unary(Unary::Tanh)
    }
    /// `1 / (1 + e^-x)`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").sigmoid();
    /// # let _ = y;
    /// ```
    pub fn sigmoid(&self) -> Expr {
        self.unary(Unary::Sigmoid)
    }
    /// `max(x, 0)`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").relu();
    /// # let _ = y;
    /// ```
    pub fn relu(&self) -> Expr {
        self.unary(Unary::Relu)
    }
    /// `1 / x`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").recip();
    /// # let _ = y;
    /// ```
    pub fn recip(&self) -> Expr {
        self.unary(Unary::Recip)
    }
    /// The larger of the two (the other if one is NaN).
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").max(0.0);
    /// # let _ = y;
    /// ```
    pub fn max(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Max, other)
    }
    /// The smaller of the two (the other if one is NaN).
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").min(1.0);
    /// # let _ = y;
    /// ```
    pub fn min(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Min, other)
    }
    /// `x^p`.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").pow(3.0);
    /// # let _ = y;
    /// ```
    pub fn pow(&self, p: impl Into<Expr>) -> Expr {
        self.binary(Binary::Pow, p)
    }
    /// 1 where `x < other`, else 0.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let below = f.input("x").lt(0.5);
    /// # let _ = below;
    /// ```
    pub fn lt(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Lt, other)
    }
    /// 1 where `x <= other`, else 0.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").le(0.5);
    /// # let _ = y;
    /// ```
    pub fn le(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Le, other)
    }
    /// 1 where `x > other`, else 0.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").gt(0.5);
    /// # let _ = y;
    /// ```
    pub fn gt(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Gt, other)
    }
    /// 1 where `x >= other`, else 0.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let y = f.input("x").ge(0.5);
    /// # let _ = y;
    /// ```
    pub fn ge(&self, other: impl Into<Expr>) -> Expr {
        self.binary(Binary::Ge, other)
    }
    /// `if self != 0 { a } else { b }`, elementwise.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let x = f.input("x");
    /// let clipped = x.gt(1.0).select(1.0, &x);
    /// # let _ = clipped;
    /// ```
    pub fn select(&self, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
        Expr::new(Node::Select(self.clone(), a.into(), b.into()))
    }
    /// The sum of each row (a per-row value).
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let (w, x) = (f.input("w"), f.row_input("x"));
    /// let y = (w * x).sum_rows(); // a GEMV: y = W x
    /// # let _ = y;
    /// ```
    pub fn sum_rows(&self) -> Expr {
        Expr::new(Node::RowReduce(ReduceOp::Sum, self.clone()))
    }
    /// The largest value of each row.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let m = f.input("x").max_rows();
    /// # let _ = m;
    /// ```
    pub fn max_rows(&self) -> Expr {
        Expr::new(Node::RowReduce(ReduceOp::Max, self.clone()))
    }
    /// The smallest value of each row.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// let m = f.input("x").min_rows();
    /// # let _ = m;
    /// ```
    pub fn min_rows(&self) -> Expr {
        Expr::new(Node::RowReduce(ReduceOp::Min, self.clone()))
    }
    /// The `k`-th smallest value of each row (k = 1: the smallest), counting repeated values
    /// once each; NaN where `k` is not a whole number from 1 to the row's length. `k` is a
    /// scalar: a constant, or a [`Fusion::scalar`](super::Fusion::scalar) input so that one
    /// kernel serves every k. NaNs order after +infinity (with the sign bit set, before
    /// -infinity). Computed by a radix selection over the values' bits (32 passes along the row
    /// for f32, f16 and bf16, 64 for f64), with no extra memory.
    ///
    /// ```
    /// # let mut f = cudrv::fuse::Fusion::new("k", cudrv::fuse::DType::F32);
    /// // The distance from each point (per row) to its 5th nearest point (per column).
    /// let (xi, xj) = (f.col_input("xi"), f.row_input("xj"));
    /// let d = (&xi - &xj).abs();
    /// let fifth = d.kth_smallest_rows(5.0);
    /// assert_eq!(fifth.shape(), cudrv::fuse::Shape::Col);
    /// ```
    pub fn kth_smallest_rows(&self, k: impl Into<Expr>) -> Expr {
        Expr::new(Node::RowKth(self.clone(), k.into()))
    }

    /// Checks that every input this tree reads is the fusion's own (same index, same name).
    pub(crate) fn check_inputs(&self, inputs: &[Input]) -> std::result::Result<(), String> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        let mut bad = None;
        self.visit(&mut |e| {
            if let Node::Input { index, name, .. } = e.node() {
                if inputs.get(*index).map(|i| &i.name) != Some(name) {
                    bad.get_or_insert(format!("input `{name}` belongs to another fusion"));
                }
            }
        });
        bad.map_or(Ok(()), Err)
    }

    /// Calls `f` on every node of the tree, children first (shared nodes more than once).
    pub(crate) fn visit(&self, f: &mut impl FnMut(&Expr)) {
        match self.node() {
            Node::Input { .. } | Node::Const(_) => {}
            Node::Unary(_, a) | Node::RowReduce(_, a) => a.visit(f),
            Node::Binary(_, a, b) | Node::RowKth(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Node::Select(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
        }
        f(self);
    }

    /// The identity of the node (shared subtrees have one).
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

macro_rules! arith {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<R: Into<Expr>> $trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                self.binary($op, rhs)
            }
        }
        impl<R: Into<Expr>> $trait<R> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                self.binary($op, rhs)
            }
        }
        impl $trait<Expr> for f64 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::from(self).binary($op, rhs)
            }
        }
        impl $trait<&Expr> for f64 {
            type Output = Expr;
            fn $method(self, rhs: &Expr) -> Expr {
                Expr::from(self).binary($op, rhs.clone())
            }
        }
    };
}
arith!(Add, add, Binary::Add);
arith!(Sub, sub, Binary::Sub);
arith!(Mul, mul, Binary::Mul);
arith!(Div, div, Binary::Div);

impl From<&Expr> for Expr {
    fn from(e: &Expr) -> Self {
        e.clone()
    }
}

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        self.unary(Unary::Neg)
    }
}

impl Neg for &Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        self.unary(Unary::Neg)
    }
}

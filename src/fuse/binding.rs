//! Binding a fusion's named arguments to buffers and scalars, checked one by one: the words of
//! a launch (or of an executor item) and the memory each argument touches.

use super::codegen::{row_reductions, Layout};
use super::{FuseType, Fusion, OutputKind, Shape};
use crate::error::{Error, Result};

/// Memory an argument touches, for ordering work that runs without launches between items
/// (the persistent executor).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Access {
    /// First byte.
    pub(crate) base: u64,
    /// One past the last byte.
    pub(crate) end: u64,
    /// Bytes per element.
    pub(crate) elem: u64,
    /// Whether it is written.
    pub(crate) write: bool,
    /// Whether element `e` is touched only by the thread that handles index `e` of a grid-stride
    /// loop over the elements (then two such accesses of the same buffer need no barrier).
    pub(crate) aligned: bool,
}

/// Everything a complete binding gives.
pub(crate) struct Bound {
    pub(crate) words: Vec<u64>,
    pub(crate) accesses: Vec<Access>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

/// A fusion's arguments being bound; the first mistake is kept and reported by `finish`.
pub(crate) struct Binding<'f> {
    fusion: &'f Fusion,
    layout: &'f Layout,
    rows: usize,
    cols: usize,
    words: Vec<u64>,
    set: Vec<bool>,
    accesses: Vec<Access>,
    error: Option<Error>,
    elementwise: bool,
}

impl<'f> Binding<'f> {
    pub(crate) fn new(fusion: &'f Fusion, layout: &'f Layout, rows: usize, cols: usize) -> Self {
        let mut words = vec![0u64; layout.words];
        words[0] = rows as u64;
        words[1] = cols as u64;
        Binding {
            fusion,
            layout,
            rows,
            cols,
            words,
            set: vec![false; fusion.inputs.len() + fusion.outputs.len()],
            accesses: Vec::new(),
            error: None,
            elementwise: row_reductions(fusion).is_empty(),
        }
    }

    /// Keeps the first error.
    pub(crate) fn fail(&mut self, result: Result<()>) {
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    /// Binds input `name`; true if it was bound (the caller may then order the buffer's stream).
    pub(crate) fn input<T: FuseType>(&mut self, name: &str, ptr: u64, len: usize) -> bool {
        if self.error.is_some() {
            return false;
        }
        let fusion = self.fusion;
        let result = match fusion.inputs.iter().position(|i| i.name == name) {
            None => Err(self.unknown(name, "input")),
            Some(i) if fusion.inputs[i].shape == Shape::Scalar => {
                Err(self.mistake(format!("`{name}` is a scalar; give it with .scalar(\"{name}\", value)")))
            }
            Some(i) => self.check_buffer::<T>(name, len, fusion.inputs[i].shape).map(|()| {
                self.words[self.layout.input[i]] = ptr;
                self.set[i] = true;
                self.touch::<T>(ptr, len, false, fusion.inputs[i].shape);
            }),
        };
        let ok = result.is_ok();
        self.fail(result);
        ok
    }

    /// Gives scalar `name` its value.
    pub(crate) fn scalar(&mut self, name: &str, value: f64) {
        if self.error.is_some() {
            return;
        }
        let fusion = self.fusion;
        let result = match fusion.inputs.iter().position(|i| i.name == name) {
            Some(i) if fusion.inputs[i].shape == Shape::Scalar => {
                self.words[self.layout.input[i]] = value.to_bits();
                self.set[i] = true;
                Ok(())
            }
            Some(_) => Err(self.mistake(format!("`{name}` is a buffer input; give it with .input"))),
            None => Err(self.unknown(name, "scalar")),
        };
        self.fail(result);
    }

    /// Binds output `name`; true if it was bound.
    pub(crate) fn output<T: FuseType>(&mut self, name: &str, ptr: u64, len: usize) -> bool {
        if self.error.is_some() {
            return false;
        }
        let fusion = self.fusion;
        let result = match fusion.outputs.iter().position(|o| o.name == name) {
            None => Err(self.unknown(name, "output")),
            Some(o) => {
                let shape = match fusion.outputs[o].kind {
                    OutputKind::Store => fusion.outputs[o].expr.shape(),
                    OutputKind::Reduce(_) => Shape::Scalar,
                };
                self.check_buffer::<T>(name, len, shape).map(|()| {
                    self.words[self.layout.output[o]] = ptr;
                    self.set[fusion.inputs.len() + o] = true;
                    self.touch::<T>(ptr, len, true, shape);
                })
            }
        };
        let ok = result.is_ok();
        self.fail(result);
        ok
    }

    /// The words and accesses, or the first mistake (a missing argument included).
    pub(crate) fn finish(mut self) -> Result<Bound> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let fusion = self.fusion;
        let names = fusion
            .inputs
            .iter()
            .map(|i| &i.name)
            .chain(fusion.outputs.iter().map(|o| &o.name));
        let missing: Vec<String> = names
            .zip(&self.set)
            .filter(|(_, &set)| !set)
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        if !missing.is_empty() {
            return Err(self.mistake(format!("not given: {}", missing.join(", "))));
        }
        if self.rows.checked_mul(self.cols).map_or(true, |t| t > i64::MAX as usize) {
            return Err(self.mistake(format!("{} x {} elements overflow", self.rows, self.cols)));
        }
        Ok(Bound {
            words: self.words,
            accesses: self.accesses,
            rows: self.rows,
            cols: self.cols,
        })
    }

    fn touch<T: FuseType>(&mut self, ptr: u64, len: usize, write: bool, shape: Shape) {
        let elem = T::DTYPE.size() as u64;
        self.accesses.push(Access {
            base: ptr,
            end: ptr + len as u64 * elem,
            elem,
            write,
            aligned: self.elementwise && shape == Shape::Matrix,
        });
    }

    fn check_buffer<T: FuseType>(&self, name: &str, len: usize, shape: Shape) -> Result<()> {
        let dtype = self.fusion.dtype;
        if T::DTYPE != dtype {
            return Err(self.mistake(format!(
                "`{name}` holds {} elements; the fusion's type is {}",
                T::DTYPE.name(),
                dtype.name()
            )));
        }
        let (want, what) = match shape {
            Shape::Matrix => (self.rows.saturating_mul(self.cols), "rows x cols"),
            Shape::Row => (self.cols, "cols"),
            Shape::Col => (self.rows, "rows"),
            Shape::Scalar => (1, "one value"),
        };
        if len != want {
            return Err(self.mistake(format!(
                "`{name}` holds {len} elements; it needs {want} ({what}, for {} x {})",
                self.rows, self.cols
            )));
        }
        Ok(())
    }

    fn unknown(&self, name: &str, what: &str) -> Error {
        let fusion = self.fusion;
        let known: Vec<&str> = fusion
            .inputs
            .iter()
            .map(|i| i.name.as_str())
            .chain(fusion.outputs.iter().map(|o| o.name.as_str()))
            .collect();
        self.mistake(format!("no {what} named `{name}` (it has: {})", known.join(", ")))
    }

    fn mistake(&self, message: String) -> Error {
        Error::InvalidArgument(format!("fused kernel `{}`: {message}", self.fusion.name))
    }
}

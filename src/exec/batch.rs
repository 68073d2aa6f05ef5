//! Batches of executor items: encoding, argument checks, and the barriers that order them.
//!
//! Barrier rule: items run without a barrier between them while every pair of accesses to the
//! same memory is made by the same threads, i.e. both are "aligned" (element `e` handled by the
//! thread that handles index `e` of a grid-stride loop) on the same base address and element
//! size, or neither writes. Any other overlap since the last barrier gets a barrier first; an
//! item that writes memory through other threads (a reduction, a per-row result) is followed by
//! one.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::source::{op, BARRIER_BEFORE, ITEM_WORDS};
use super::Executor;
use crate::error::{Error, Result};
use crate::fuse::{Access, Binding, FuseType};
use crate::memory::DeviceSlice;
use crate::stream::Stream;

/// Items to run on an [`Executor`], in order; made by [`Executor::batch`].
///
/// Buffers are borrowed shared (outputs too: one item writes what the next reads) until the
/// batch's [`Ticket`] is waited for or dropped.
///
/// ```no_run
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let s = ctx.new_stream()?;
/// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
/// let x = DeviceBuffer::from_slice(&s, &[2.0f32; 1000])?;
/// let (y, total) = (DeviceBuffer::<f32>::zeroed(&s, 1000)?, DeviceBuffer::<f32>::zeroed(&s, 1)?);
/// let mut b = exec.batch();
/// b.scale(&y, 3.0, &x)?; // y = 3x
/// b.sum(&total, &y)?; // a barrier is put before it: the sum reads every block's y
/// b.run()?;
/// assert_eq!(total.to_vec()?, vec![6000.0]);
/// # exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct Batch<'a> {
    exec: &'a Executor,
    items: Vec<[u64; ITEM_WORDS]>,
    /// Memory touched since the last barrier, each range once (a step touches a few buffers
    /// many times, so a short list beats a map).
    segment: Vec<Access>,
    barrier_next: bool,
    /// The buffers' streams, whose queued work must finish before the batch runs.
    streams: Vec<Arc<Stream>>,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> Batch<'a> {
    pub(crate) fn new(exec: &'a Executor) -> Self {
        Batch {
            exec,
            items: Vec::new(),
            segment: Vec::new(),
            barrier_next: false,
            streams: Vec::new(),
            _borrows: PhantomData,
        }
    }

    /// Items so far.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// assert_eq!(exec.batch().len(), 0);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch has no items.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// assert!(exec.batch().is_empty());
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many of the items start with a grid barrier (the rest follow their predecessor
    /// without waiting).
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 64)?, DeviceBuffer::<f32>::zeroed(&s, 64)?);
    /// let mut b = exec.batch();
    /// b.axpy(&y, 1.0, &x)?;
    /// b.axpy(&y, 1.0, &x)?; // same elements, same threads: no barrier
    /// assert_eq!(b.barriers(), 0);
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn barriers(&self) -> usize {
        self.items.iter().filter(|i| i[0] & BARRIER_BEFORE != 0).count()
    }

    /// `y[i] = value`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// let y = DeviceBuffer::<f32>::zeroed(&s, 8)?;
    /// let mut b = exec.batch();
    /// b.fill(&y, 1.5)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn fill(&mut self, y: &'a impl DeviceSlice<f32>, value: f32) -> Result<()> {
        let n = y.len() as u64;
        let acc = [self.access(y, true, true)?];
        self.push_item([op::FILL, y.device_ptr(), n, (value as f64).to_bits()], &acc, false);
        Ok(())
    }

    /// `y[i] = alpha x[i]`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?);
    /// let mut b = exec.batch();
    /// b.scale(&y, 2.0, &x)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn scale(&mut self, y: &'a impl DeviceSlice<f32>, alpha: f32, x: &'a impl DeviceSlice<f32>) -> Result<()> {
        self.yx(op::SCALE, "scale", y, x, &[alpha])
    }

    /// `y[i] += alpha x[i]`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?);
    /// let mut b = exec.batch();
    /// b.axpy(&y, 0.5, &x)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn axpy(&mut self, y: &'a impl DeviceSlice<f32>, alpha: f32, x: &'a impl DeviceSlice<f32>) -> Result<()> {
        self.yx(op::AXPY, "axpy", y, x, &[alpha])
    }

    /// `y[i] = alpha x[i] + beta y[i]`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?);
    /// let mut b = exec.batch();
    /// b.axpby(&y, 0.5, &x, 0.25)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn axpby(
        &mut self,
        y: &'a impl DeviceSlice<f32>,
        alpha: f32,
        x: &'a impl DeviceSlice<f32>,
        beta: f32,
    ) -> Result<()> {
        self.yx(op::AXPBY, "axpby", y, x, &[alpha, beta])
    }

    /// `out[i] = a[i] + b[i]`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, y, z) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?);
    /// let mut b = exec.batch();
    /// b.add(&z, &x, &y)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn add(
        &mut self,
        out: &'a impl DeviceSlice<f32>,
        a: &'a impl DeviceSlice<f32>,
        b: &'a impl DeviceSlice<f32>,
    ) -> Result<()> {
        self.binary(op::ADD, "add", out, a, b)
    }

    /// `out[i] = a[i] * b[i]`.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, y, z) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 8)?);
    /// let mut b = exec.batch();
    /// b.mul(&z, &x, &y)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn mul(
        &mut self,
        out: &'a impl DeviceSlice<f32>,
        a: &'a impl DeviceSlice<f32>,
        b: &'a impl DeviceSlice<f32>,
    ) -> Result<()> {
        self.binary(op::MUL, "mul", out, a, b)
    }

    /// `out[0] = sum of x` (in a fixed order: the same bits every run).
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let (x, total) = (DeviceBuffer::<f32>::zeroed(&s, 8)?, DeviceBuffer::<f32>::zeroed(&s, 1)?);
    /// let mut b = exec.batch();
    /// b.sum(&total, &x)?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn sum(&mut self, out: &'a impl DeviceSlice<f32>, x: &'a impl DeviceSlice<f32>) -> Result<()> {
        if out.len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "sum: the output holds {} elements; it takes 1",
                out.len()
            )));
        }
        let acc = [self.access(out, true, false)?, self.access(x, false, false)?];
        self.push_item([op::SUM, out.device_ptr(), x.device_ptr(), x.len() as u64], &acc, true);
        Ok(())
    }

    /// Holds the executor for `time` (one thread per block waits): a stand-in for a slow item,
    /// and how the watchdog is tested.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// let mut b = exec.batch();
    /// b.sleep(std::time::Duration::from_micros(50));
    /// b.run()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn sleep(&mut self, time: Duration) {
        self.push_item([op::SLEEP, time.as_nanos().min(u64::MAX as u128) as u64], &[], false);
    }

    /// Starts an item running the executor's fusion `name` over `rows x cols` elements; bind its
    /// arguments and [`FusedItem::push`] it.
    ///
    /// ```no_run
    /// use cudrv::fuse::{DType, Fusion};
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let s = ctx.new_stream()?;
    /// let mut f = Fusion::new("relu_into", DType::F32);
    /// let x = f.input("x");
    /// f.output("y", x.relu());
    /// let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
    /// let x = DeviceBuffer::from_slice(&s, &[-1.0f32, 2.0])?;
    /// let y = DeviceBuffer::<f32>::zeroed(&s, 2)?;
    /// let mut b = exec.batch();
    /// b.fused("relu_into", 1, 2)?.input("x", &x).output("y", &y).push()?;
    /// b.run()?;
    /// assert_eq!(y.to_vec()?, vec![0.0, 2.0]);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn fused<'b>(&'b mut self, name: &str, rows: usize, cols: usize) -> Result<FusedItem<'b, 'a>> {
        let exec = self.exec;
        let Some(index) = exec.fusions.iter().position(|f| f.name() == name) else {
            let known: Vec<&str> = exec.fusions.iter().map(|f| f.name()).collect();
            return Err(Error::InvalidArgument(format!(
                "the executor has no fusion `{name}` (it has: {}); add it with ExecutorBuilder::fusion",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )));
        };
        Ok(FusedItem {
            binding: Binding::new(&exec.fusions[index], &exec.layouts[index], rows, cols),
            index,
            streams: Vec::new(),
            batch: self,
        })
    }

    /// Queues the batch (after the work already queued on its buffers' streams has finished);
    /// returns at once with a ticket that waits for it.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # let y = DeviceBuffer::<f32>::zeroed(&s, 8)?;
    /// let mut b = exec.batch();
    /// b.fill(&y, 1.0)?;
    /// let ticket = b.submit()?;
    /// // ... host work overlaps the device's ...
    /// ticket.wait()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn submit(mut self) -> Result<Ticket<'a>> {
        for stream in &self.streams {
            if !stream.query()? {
                stream.synchronize()?;
            }
        }
        let mut end = [0u64; ITEM_WORDS];
        end[0] = op::END_BATCH;
        self.items.push(end);
        let seq = self.exec.publish(&mut self.items)?;
        Ok(Ticket {
            exec: self.exec,
            seq,
            waited: false,
            _borrows: PhantomData,
        })
    }

    /// [`Batch::submit`], then [`Ticket::wait`].
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// exec.batch().run()?; // an empty batch: a round trip through the queue
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn run(self) -> Result<()> {
        self.submit()?.wait()
    }

    /// An elementwise item `code(y, x, n, scalars...)` over y and x of one length (at most two
    /// scalars).
    fn yx(
        &mut self,
        code: u64,
        what: &str,
        y: &'a impl DeviceSlice<f32>,
        x: &'a impl DeviceSlice<f32>,
        scalars: &[f32],
    ) -> Result<()> {
        let n = same_len(what, &[y.len(), x.len()])?;
        let acc = [self.access(y, true, true)?, self.access(x, false, true)?];
        let mut words = [code, y.device_ptr(), x.device_ptr(), n, 0, 0];
        for (w, &v) in words[4..].iter_mut().zip(scalars) {
            *w = (v as f64).to_bits();
        }
        self.push_item(&words[..4 + scalars.len()], &acc, false);
        Ok(())
    }

    fn binary(
        &mut self,
        code: u64,
        what: &str,
        out: &'a impl DeviceSlice<f32>,
        a: &'a impl DeviceSlice<f32>,
        b: &'a impl DeviceSlice<f32>,
    ) -> Result<()> {
        let n = same_len(what, &[out.len(), a.len(), b.len()])?;
        let acc = [
            self.access(out, true, true)?,
            self.access(a, false, true)?,
            self.access(b, false, true)?,
        ];
        self.push_item([code, out.device_ptr(), a.device_ptr(), b.device_ptr(), n], &acc, false);
        Ok(())
    }

    /// Checks the buffer belongs to the executor's context, notes its stream and describes the
    /// access.
    fn access<T>(&mut self, buf: &impl DeviceSlice<T>, write: bool, aligned: bool) -> Result<Access> {
        let stream = buf.stream();
        if stream.context().raw() != self.exec.function.context().raw() {
            return Err(Error::InvalidArgument(
                "a buffer of another context than the executor's was given".into(),
            ));
        }
        self.note_stream(stream);
        let elem = size_of::<T>() as u64;
        let base = buf.device_ptr();
        Ok(Access {
            base,
            end: base + buf.len() as u64 * elem,
            elem,
            write,
            aligned,
        })
    }

    /// Appends an item, with a barrier before it where the rule (module docs) asks for one.
    fn push_item(&mut self, words: impl AsRef<[u64]>, accesses: &[Access], global: bool) {
        let mut item = [0u64; ITEM_WORDS];
        let words = words.as_ref();
        item[..words.len()].copy_from_slice(words);
        let needs = self.barrier_next
            || accesses.iter().any(|a| {
                self.segment.iter().any(|r| {
                    let overlap = a.base < r.end && r.base < a.end;
                    let same_threads = a.aligned && r.aligned && a.base == r.base && a.elem == r.elem;
                    overlap && (r.write || a.write) && !same_threads
                })
            });
        if needs && !self.items.is_empty() {
            item[0] |= BARRIER_BEFORE;
            self.segment.clear();
        }
        for a in accesses {
            let same = |r: &&mut Access| (r.base, r.end, r.elem, r.aligned) == (a.base, a.end, a.elem, a.aligned);
            match self.segment.iter_mut().find(same) {
                Some(r) => r.write |= a.write,
                None => self.segment.push(*a),
            }
        }
        let writes_across = global || accesses.iter().any(|a| a.write && !a.aligned);
        self.barrier_next = writes_across;
        if writes_across {
            self.segment.clear();
        }
        self.items.push(item);
    }
}

impl Batch<'_> {
    /// Remembers a buffer's stream (once).
    fn note_stream(&mut self, stream: &Arc<Stream>) {
        if !self.streams.iter().any(|s| s.raw() == stream.raw()) {
            self.streams.push(stream.clone());
        }
    }
}

fn same_len(what: &str, lens: &[usize]) -> Result<u64> {
    if lens.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::InvalidArgument(format!("{what}: lengths differ ({lens:?})")));
    }
    Ok(lens[0] as u64)
}

/// An item running one of the executor's fusions, being bound; made by [`Batch::fused`].
///
/// ```no_run
/// use cudrv::fuse::{DType, Fusion};
/// use cudrv::DeviceBuffer;
/// let ctx = cudrv::Context::new(0)?;
/// let s = ctx.new_stream()?;
/// let mut f = Fusion::new("scaled", DType::F32);
/// let (x, a) = (f.input("x"), f.scalar("a"));
/// f.output("y", x * a);
/// let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
/// let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 4)?, DeviceBuffer::<f32>::zeroed(&s, 3)?);
/// let mut b = exec.batch();
/// // y holds 3 elements, not 4: refused when pushed.
/// assert!(b.fused("scaled", 1, 4)?.input("x", &x).scalar("a", 2.0).output("y", &y).push().is_err());
/// # drop(b);
/// # exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct FusedItem<'b, 'a> {
    batch: &'b mut Batch<'a>,
    index: usize,
    binding: Binding<'a>,
    streams: Vec<Arc<Stream>>,
}

impl<'a> FusedItem<'_, 'a> {
    /// Binds input buffer `name`.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let mut f = Fusion::new("copy", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// # let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 4)?, DeviceBuffer::<f32>::zeroed(&s, 4)?);
    /// let mut b = exec.batch();
    /// b.fused("copy", 1, 4)?.input("x", &x).output("y", &y).push()?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn input<T: FuseType>(mut self, name: &str, buffer: &'a impl DeviceSlice<T>) -> Self {
        if self.binding.input::<T>(name, buffer.device_ptr(), buffer.len()) {
            self.streams.push(buffer.stream().clone());
        }
        self
    }

    /// Gives scalar `name` its value.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let mut f = Fusion::new("scaled", DType::F32);
    /// # let (x, a) = (f.input("x"), f.scalar("a"));
    /// # f.output("y", x * a);
    /// # let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 4)?, DeviceBuffer::<f32>::zeroed(&s, 4)?);
    /// let mut b = exec.batch();
    /// b.fused("scaled", 1, 4)?.input("x", &x).scalar("a", 0.5).output("y", &y).push()?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn scalar(mut self, name: &str, value: f64) -> Self {
        self.binding.scalar(name, value);
        self
    }

    /// Binds output buffer `name` (borrowed shared, see [`Batch`]).
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let mut f = Fusion::new("copy", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// # let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
    /// # let (x, y) = (DeviceBuffer::<f32>::zeroed(&s, 4)?, DeviceBuffer::<f32>::zeroed(&s, 4)?);
    /// let mut b = exec.batch();
    /// b.fused("copy", 1, 4)?.input("x", &x).output("y", &y).push()?;
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn output<T: FuseType>(mut self, name: &str, buffer: &'a impl DeviceSlice<T>) -> Self {
        if self.binding.output::<T>(name, buffer.device_ptr(), buffer.len()) {
            self.streams.push(buffer.stream().clone());
        }
        self
    }

    /// Checks the arguments (all given, lengths, types, the executor's context) and appends the
    /// item.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// # let mut f = Fusion::new("copy", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// # let exec = cudrv::exec::Executor::builder(&ctx).fusion(&f).start()?;
    /// # let x = DeviceBuffer::<f32>::zeroed(&s, 4)?;
    /// let mut b = exec.batch();
    /// // The output is missing: an error naming it.
    /// assert!(b.fused("copy", 1, 4)?.input("x", &x).push().is_err());
    /// # drop(b);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn push(self) -> Result<()> {
        let bound = self.binding.finish()?;
        let exec = self.batch.exec;
        for s in &self.streams {
            if s.context().raw() != exec.function.context().raw() {
                return Err(Error::InvalidArgument(
                    "a buffer of another context than the executor's was given".into(),
                ));
            }
        }
        for s in &self.streams {
            self.batch.note_stream(s);
        }
        let layout = &exec.layouts[self.index];
        let mut words = bound.words;
        if let Some(scratch) = exec.scratch[self.index].as_ref() {
            layout.bind_scratch(&mut words, scratch.device_ptr());
        }
        let mut item = Vec::with_capacity(1 + words.len());
        item.push(op::FUSED + self.index as u64);
        item.extend_from_slice(&words);
        let global = layout.whole > 0 || bound.accesses.iter().any(|a| !a.aligned);
        self.batch.push_item(item, &bound.accesses, global);
        Ok(())
    }
}

/// A submitted batch; [`Ticket::wait`] waits for it (dropping it waits too, ignoring errors).
///
/// ```no_run
/// # let ctx = cudrv::Context::new(0)?;
/// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
/// let ticket = exec.batch().submit()?;
/// assert!(ticket.number() >= 1);
/// ticket.wait()?;
/// # exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct Ticket<'a> {
    exec: &'a Executor,
    seq: u64,
    waited: bool,
    _borrows: PhantomData<&'a ()>,
}

impl Ticket<'_> {
    /// The batch's number (batches count from 1, in submission order).
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// let (a, b) = (exec.batch().submit()?, exec.batch().submit()?);
    /// assert_eq!(b.number(), a.number() + 1);
    /// # drop((a, b));
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn number(&self) -> u64 {
        self.seq
    }

    /// Waits until the batch (and every earlier one) has finished, within the executor's
    /// watchdog.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// exec.batch().submit()?.wait()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn wait(mut self) -> Result<()> {
        self.waited = true;
        self.exec.wait(self.seq)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.waited {
            let _ = self.exec.wait(self.seq);
        }
    }
}

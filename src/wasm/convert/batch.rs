//! Data → core: arrays of `Datum`s, with the fast lane for datums of the usual form.

use super::*;

/// An array of `Datum`s.
///
/// Datums of the usual form (see the batch reader in the JS above) take a fast lane: one
/// JS call reads a block of them, one copies all their arrays, and the checks are made
/// here on the copies. Any other datum, and any usual one that fails a check, is
/// converted by [`datum_rel`], which makes the same checks and reports the error, so both
/// lanes give the same `Datum`s and the same errors.
pub fn data(v: &JsValue) -> Result<Vec<Datum>, JsValue> {
    if !Array::is_array(v) {
        return Err(type_error(
            "data",
            format!("must be an array of Datum objects, got {}", describe(v)),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    let mut out = Vec::with_capacity(arr.length() as usize);
    let _frame = Frame::enter();
    data_blocks(arr, &mut out).map(|()| out)
}

/// Room for the batch reader's records (f64s): ~500 usual datums per block.
pub(super) const BATCH_SCRATCH: usize = 8192;

pub(super) fn data_blocks(arr: &Array, out: &mut Vec<Datum>) -> Result<(), JsValue> {
    let j = js();
    let n = arr.length();
    let mut scratch = vec![0f64; BATCH_SCRATCH];
    let mut from = 0;
    while from < n {
        let got = read_batch(
            &j.memory,
            arr,
            from,
            scratch.as_mut_ptr() as u32,
            BATCH_SCRATCH as u32,
            &j.batch_keys,
        );
        // (The reader always reads at least one datum; should it not, that one goes slowly.)
        let mut lanes = if got == 0 {
            vec![None]
        } else {
            plan_block(&scratch, got as usize)
        };
        let mut table = Vec::new();
        for lane in lanes.iter_mut().flatten() {
            lane.allocate(&mut table);
        }
        let copied = table.is_empty()
            || copy_batch(&j.memory, table.as_ptr() as u32, (table.len() / 4) as u32);
        release_batch();
        for (k, lane) in lanes.into_iter().enumerate() {
            let i = from + k as u32;
            // SAFETY: `finish` is only called when `copy_batch` filled every allocation.
            let fast = lane.filter(|_| copied).and_then(|l| unsafe { l.finish() });
            let d = match fast {
                Some(d) => d,
                None => datum_rel(&arr.get(i))
                    .map_err(|e| input_error(&pre(e, &format!("data[{i}]"))))?,
            };
            out.push(d);
        }
        from += got.max(1);
    }
    Ok(())
}

/// A usual datum as the batch reader saw it; its arrays get room in [`Usual::allocate`]
/// and are checked in [`Usual::finish`].
pub(super) struct Usual {
    chunks: Vec<Kept<u32>>,
    inputs: Vec<UsualInput>,
}

/// An array the reader kept: its index in the reader's list, its kind and length, and
/// the room made for it.
pub(super) struct Kept<T> {
    b: u32,
    k: u32,
    n: usize,
    room: Vec<T>,
}

impl<T> Kept<T> {
    fn new(b: u32, k: u32, n: usize) -> Self {
        Kept {
            b,
            k,
            n,
            room: Vec::new(),
        }
    }
    /// Makes room for the `n` elements (`T`s) and asks for them to be copied there.
    fn allocate(&mut self, table: &mut Vec<u32>) {
        self.room = Vec::with_capacity(self.n);
        table.extend([self.b, self.k, self.room.as_mut_ptr() as u32, self.n as u32]);
    }
    /// The copied elements.
    ///
    /// # Safety
    /// `copy_batch` has copied all `n` elements into the room.
    unsafe fn take(mut self) -> Vec<T> {
        unsafe { self.room.set_len(self.n) };
        self.room
    }
}

pub(super) struct UsualInput {
    /// Index in [`KNOWN_INPUTS`].
    known: usize,
    values: UsualValues,
    /// The shape's one number, or -1 for no shape.
    dim: f64,
}

pub(super) enum UsualValues {
    /// float32 from a `Float32Array`.
    F32(Kept<f32>),
    /// int64 from an `Int32Array`/`Uint32Array`: copied into the upper half of room for
    /// `n` i64s, then widened in place.
    Wide(Kept<i64>),
}

impl Usual {
    fn allocate(&mut self, table: &mut Vec<u32>) {
        for c in &mut self.chunks {
            c.allocate(table);
        }
        for i in &mut self.inputs {
            match &mut i.values {
                UsualValues::F32(a) => a.allocate(table),
                UsualValues::Wide(a) => {
                    a.allocate(table);
                    // The source goes into u32s n..2n of the room.
                    let at = table.len() - 2;
                    table[at] += 4 * a.n as u32;
                }
            }
        }
    }

    /// The `Datum`, or `None` if a check fails (the slow way then reports it).
    ///
    /// # Safety
    /// `copy_batch` has copied every array into the room made by [`Usual::allocate`].
    unsafe fn finish(self) -> Option<Datum> {
        let mut chunks = Vec::with_capacity(self.chunks.len());
        for c in self.chunks {
            // SAFETY: per this function's contract.
            let tokens = unsafe { c.take() };
            chunks.push(ModelInputChunk::EncodedText { tokens });
        }
        let model_input = ModelInput { chunks };
        // (Int32Array ids below 0 read as u32s above i32::MAX, which this refuses.)
        model_input.validate().ok()?;
        let mut loss_fn_inputs = LossFnInputs::new();
        for i in self.inputs {
            let values = match i.values {
                // SAFETY: per this function's contract.
                UsualValues::F32(a) => TensorValues::Float32(unsafe { a.take() }),
                UsualValues::Wide(a) => {
                    let (k, n) = (a.k, a.n);
                    // SAFETY: per this function's contract (the source is in the upper half).
                    TensorValues::Int64(unsafe { widen_in_place(a.room, k, n) })
                }
            };
            let shape = if i.dim < 0.0 {
                Some(vec![values.len()])
            } else {
                dims_of(vec![i.dim]).ok()?
            };
            let t = TensorData {
                values,
                shape,
                sparse_crow_indices: None,
                sparse_col_indices: None,
            };
            t.validate().ok()?;
            loss_fn_inputs.insert(KNOWN_INPUTS[i.known].to_string(), t);
        }
        Some(Datum {
            model_input,
            loss_fn_inputs,
            model_input_spans: None,
            loss_fn_input_spans: None,
        })
    }
}

/// Reads the records of `count` datums: `None` for those that go the slow way.
pub(super) fn plan_block(scratch: &[f64], count: usize) -> Vec<Option<Usual>> {
    // SAFETY: plain reads of f64s JS wrote through the address given out; the reader
    // never writes past the capacity it was given.
    let at = |i: usize| unsafe { std::ptr::read_volatile(&scratch[i]) };
    let mut p = 0;
    let mut lanes = Vec::with_capacity(count);
    for _ in 0..count {
        let usual = at(p) == 1.0;
        p += 1;
        if !usual {
            lanes.push(None);
            continue;
        }
        let mut fast = true;
        let nc = at(p) as usize;
        p += 1;
        let mut chunks = Vec::with_capacity(nc);
        for _ in 0..nc {
            let (k, n, b) = (at(p) as u32, at(p + 1), at(p + 2) as u32);
            p += 3;
            fast &= n <= MAX_ELEMENTS as f64 && (k == K_I32 || k == K_U32);
            chunks.push(Kept::new(b, k, n as usize));
        }
        let ni = at(p) as usize;
        p += 1;
        let mut inputs = Vec::with_capacity(ni);
        for _ in 0..ni {
            let (known, k, code, n, dim, b) = (
                at(p) as usize,
                at(p + 1) as u32,
                at(p + 2) as u32,
                at(p + 3),
                at(p + 4),
                at(p + 5) as u32,
            );
            p += 6;
            let dtype = match code {
                1 => Some(DType::Float32),
                2 => Some(DType::Int64),
                0 => KNOWN_INPUTS
                    .get(known)
                    .and_then(|key| loss_input_dtype(key)),
                _ => None,
            };
            fast &= n <= MAX_ELEMENTS as f64 && known < KNOWN_INPUTS.len();
            let values = match (dtype, k) {
                (Some(DType::Float32), K_F32) => UsualValues::F32(Kept::new(b, k, n as usize)),
                (Some(DType::Int64), K_I32 | K_U32) => {
                    UsualValues::Wide(Kept::new(b, k, n as usize))
                }
                _ => {
                    fast = false;
                    continue;
                }
            };
            inputs.push(UsualInput { known, values, dim });
        }
        lanes.push(fast.then_some(Usual { chunks, inputs }));
    }
    lanes
}

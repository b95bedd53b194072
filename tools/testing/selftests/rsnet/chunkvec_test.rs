// SPDX-License-Identifier: GPL-2.0

//! Tests of `kernel::chunk_vec::ChunkVec`, the flow storage of the Rust fq,
//! run when the module loads: loading fails with `EINVAL` if any check
//! fails, and each check prints its result (`chunkvec.sh` reads them).
//!
//! Each element knows its index, so a wrong chunk or offset shows; dropping
//! the array must drop every element exactly once.

use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::chunk_vec::{ChunkVec, CHUNKVEC_LEAF};
use kernel::prelude::*;

module! {
    type: ChunkVecTest,
    name: "chunkvec_test",
    author: "rsnet",
    description: "rsnet: tests of kernel::chunk_vec::ChunkVec",
    license: "GPL",
}

/// Elements per chunk: small, so a few chunks cover the boundaries.
const N: usize = 4;
/// Chunks pushed.
const CHUNKS: usize = 5;
/// Leaves of the table.
const L: usize = 2;

/// Elements dropped so far.
static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// An element that knows its index; 128 bytes, as a flow of the Rust fq.
#[repr(align(64))]
struct Elem {
    index: usize,
    value: u64,
    _pad: [u8; 100],
}

impl Elem {
    fn new(index: usize) -> Self {
        Elem {
            index,
            value: index as u64 * 7,
            _pad: [0; 100],
        }
    }
}

impl Drop for Elem {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts and prints the checks.
struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    fn check(&mut self, desc: &str, ok: bool) {
        if ok {
            self.passed += 1;
            pr_info!("ok: {desc}\n");
        } else {
            self.failed += 1;
            pr_err!("FAILED: {desc}\n");
        }
    }
}

/// Pushes `CHUNKS` chunks whose elements are numbered from `len()` on.
fn fill(v: &mut ChunkVec<Elem, N, L>, t: &mut Checks) -> Result {
    let mut lens_ok = true;
    for _ in 0..CHUNKS {
        let base = v.len();
        let chunk = KBox::new(core::array::from_fn(|s| Elem::new(base + s)), GFP_KERNEL)?;
        v.push_chunk(chunk, GFP_KERNEL)?;
        lens_ok &= v.len() == base + N;
    }
    t.check("len() grows by N per chunk", lens_ok);
    Ok(())
}

fn run(t: &mut Checks) -> Result {
    let mut v = ChunkVec::<Elem, N, L>::new();
    t.check("a new array is empty", v.is_empty());
    fill(&mut v, t)?;
    t.check("not empty after a push", !v.is_empty());

    let total = N * CHUNKS;
    t.check(
        "get(i) is element i in every chunk",
        (0..total).all(|i| v.get(i).index == i && v.get(i).value == i as u64 * 7),
    );
    let size = core::mem::size_of::<Elem>();
    t.check(
        "elements of a chunk are adjacent",
        (0..total - 1).filter(|i| (i + 1) % N != 0).all(|i| {
            let a = v.get(i) as *const Elem as usize;
            let b = v.get(i + 1) as *const Elem as usize;
            b.wrapping_sub(a) == size
        }),
    );

    // Growing never moves an element: addresses before and after a push.
    let before = v.get(total - 1) as *const Elem as usize;
    fill(&mut v, t)?;
    let after = v.get(total - 1) as *const Elem as usize;
    t.check("a push moves no element", before == after);
    t.check(
        "the new chunks hold the next indices",
        (total..2 * total).all(|i| v.get(i).index == i),
    );

    // Writes through get_mut() reach that element only.
    for i in (0..2 * total).step_by(3) {
        v.get_mut(i).value = 1_000_000 + i as u64;
    }
    t.check(
        "get_mut(i) writes element i only",
        (0..2 * total).all(|i| {
            let want = if i % 3 == 0 {
                1_000_000 + i as u64
            } else {
                i as u64 * 7
            };
            v.get(i).value == want
        }),
    );

    // A chunk taken from the middle: the others keep their indices, its
    // own come back with the chunk put in its place.
    let mid = CHUNKS + 1;
    let taken = v.take_chunk(mid);
    t.check(
        "take_chunk(c) gives chunk c; the others stay where they were",
        matches!(&taken, Some(c) if c[0].index == mid * N)
            && !v.has_chunk(mid)
            && v.has_chunk(mid - 1)
            && v.has_chunk(mid + 1)
            && v.len() == 2 * total
            && (0..2 * total)
                .filter(|i| i / N != mid)
                .all(|i| v.get(i).index == i),
    );
    let again = v.take_chunk(mid).is_none() && v.take_chunk(2 * CHUNKS).is_none();
    let refused = match KBox::new(core::array::from_fn(Elem::new), GFP_KERNEL) {
        Ok(c) => matches!(v.put_chunk(mid - 1, c), Err(c) if c[0].index == 0),
        Err(_) => false,
    };
    let Some(taken) = taken else {
        return Err(EINVAL);
    };
    t.check(
        "a taken or absent chunk cannot be taken; a present one is not replaced",
        again && refused && v.get(mid * N - 1).index == mid * N - 1,
    );
    t.check(
        "put_chunk(c) puts a taken chunk back at its indices",
        v.put_chunk(mid, taken).is_ok()
            && v.has_chunk(mid)
            && (0..2 * total).all(|i| v.get(i).index == i),
    );
    // Taken again, it is dropped with the array's other elements: the
    // array drops what it holds, not the taken chunk's elements twice.
    DROPPED.store(0, Ordering::Relaxed);
    drop(v.take_chunk(mid));
    drop(v);
    t.check(
        "dropping the array drops every element once",
        DROPPED.load(Ordering::Relaxed) == 2 * total,
    );

    // An empty array drops nothing.
    DROPPED.store(0, Ordering::Relaxed);
    drop(ChunkVec::<Elem, N, L>::new());
    t.check(
        "an empty array drops nothing",
        DROPPED.load(Ordering::Relaxed) == 0,
    );
    full(t)
}

/// Fills an array of one-element chunks to its `MAX_LEN` (two leaves of
/// the table), then pushes one more.
fn full(t: &mut Checks) -> Result {
    let mut v = ChunkVec::<Elem, 1, L>::new();
    let max = ChunkVec::<Elem, 1, L>::MAX_LEN;
    let mut full_early = false;
    for i in 0..max {
        full_early |= v.is_full();
        v.push_chunk(KBox::new([Elem::new(i)], GFP_KERNEL)?, GFP_KERNEL)?;
    }
    t.check(
        "indices run on across a leaf of the table, full at MAX_LEN",
        !full_early
            && v.len() == L * CHUNKVEC_LEAF
            && v.is_full()
            && (0..max).all(|i| v.get(i).index == i),
    );
    DROPPED.store(0, Ordering::Relaxed);
    let more = v.push_chunk(KBox::new([Elem::new(max)], GFP_KERNEL)?, GFP_KERNEL);
    t.check(
        "a push past MAX_LEN fails with ENOMEM and drops its chunk",
        matches!(more, Err(e) if e == ENOMEM) && DROPPED.load(Ordering::Relaxed) == 1,
    );
    t.check(
        "a refused push leaves the array as it was",
        v.len() == max && (0..max).all(|i| v.get(i).index == i),
    );
    // Pop back across the leaf boundary (the second leaf is freed) and
    // push again (it is allocated anew).
    DROPPED.store(0, Ordering::Relaxed);
    let keep = CHUNKVEC_LEAF - 1;
    let mut popped_in_order = true;
    for i in (keep..max).rev() {
        let c = v.pop_chunk();
        popped_in_order &= matches!(&c, Some(c) if c[0].index == i);
        popped_in_order &= v.len() == i;
    }
    t.check(
        "pop_chunk returns the last chunks in turn, each element dropped once with it",
        popped_in_order && DROPPED.load(Ordering::Relaxed) == max - keep,
    );
    for i in keep..max {
        v.push_chunk(KBox::new([Elem::new(i)], GFP_KERNEL)?, GFP_KERNEL)?;
    }
    t.check(
        "after pops, pushes fill the array to MAX_LEN again",
        v.is_full() && (0..max).all(|i| v.get(i).index == i),
    );
    DROPPED.store(0, Ordering::Relaxed);
    drop(v);
    t.check(
        "dropping a full array drops each element once",
        DROPPED.load(Ordering::Relaxed) == max,
    );
    let mut e = ChunkVec::<Elem, 1, L>::new();
    t.check(
        "pop_chunk of an empty array is None",
        e.pop_chunk().is_none(),
    );
    Ok(())
}

struct ChunkVecTest;

impl kernel::Module for ChunkVecTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut t = Checks {
            passed: 0,
            failed: 0,
        };
        run(&mut t)?;
        pr_info!("{} passed, {} failed\n", t.passed, t.failed);
        if t.failed != 0 {
            return Err(EINVAL);
        }
        Ok(ChunkVecTest)
    }
}

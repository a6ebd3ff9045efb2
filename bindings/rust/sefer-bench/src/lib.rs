// SPDX-License-Identifier: MIT
//! The GlobalAlloc benchmark's parts (benches/globalalloc.rs runs them under criterion):
//! mimalloc as a `GlobalAlloc` through a small FFI of Debian's libmimalloc.so.2, and the
//! workloads, each generic over the allocator, so that every allocator runs the same code
//! through its `GlobalAlloc` methods. None of them is the binary's global allocator.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::CStr;
use std::hint::black_box;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Barrier;
use std::time::{Duration, Instant};

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
    fn malloc(size: usize) -> *mut c_void;
}

#[repr(C)]
struct DlInfo {
    fname: *const c_char,
    fbase: *mut c_void,
    sname: *const c_char,
    saddr: *mut c_void,
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

/// The file that defines the process's `malloc` (what `System` calls): the C library's
/// unless something interposed on it.
pub fn system_malloc_file() -> String {
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    let f = malloc as unsafe extern "C" fn(usize) -> *mut c_void;
    if unsafe { dladdr(f as *const c_void, &mut info) } == 0 || info.fname.is_null() {
        return "?".to_string();
    }
    unsafe { CStr::from_ptr(info.fname) }.to_string_lossy().into_owned()
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type AlignedFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type ReallocAlignedFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type VersionFn = unsafe extern "C" fn() -> c_int;

/// mimalloc as a `GlobalAlloc`: the mimalloc crate's mapping (mi_malloc for alignments up to
/// 16, which every mimalloc block has; the `_aligned` calls above), on Debian's
/// libmimalloc.so.2. The library is opened with `RTLD_LOCAL`: linked normally, its exported
/// `malloc` would replace the C library's in the whole process, and `System` would be
/// mimalloc too. The functions are called through pointers, like `System`'s `malloc` through
/// the GOT.
#[derive(Clone, Copy)]
pub struct Mimalloc {
    malloc: MallocFn,
    zalloc: MallocFn,
    malloc_aligned: AlignedFn,
    zalloc_aligned: AlignedFn,
    realloc: ReallocFn,
    realloc_aligned: ReallocAlignedFn,
    free: FreeFn,
    version: VersionFn,
}

const MI_MAX_ALIGN: usize = 16;

impl Mimalloc {
    /// Opens libmimalloc.so.2; the reason when it cannot.
    pub fn load() -> Result<Mimalloc, String> {
        unsafe {
            let h = dlopen(c"libmimalloc.so.2".as_ptr(), RTLD_NOW | RTLD_LOCAL);
            if h.is_null() {
                return Err(CStr::from_ptr(dlerror()).to_string_lossy().into_owned());
            }
            let sym = |name: &[u8]| -> Result<*mut c_void, String> {
                let p = dlsym(h, name.as_ptr() as *const c_char);
                if p.is_null() {
                    Err(format!(
                        "libmimalloc.so.2 lacks {}",
                        String::from_utf8_lossy(&name[..name.len() - 1])
                    ))
                } else {
                    Ok(p)
                }
            };
            Ok(Mimalloc {
                malloc: std::mem::transmute::<*mut c_void, MallocFn>(sym(b"mi_malloc\0")?),
                zalloc: std::mem::transmute::<*mut c_void, MallocFn>(sym(b"mi_zalloc\0")?),
                malloc_aligned: std::mem::transmute::<*mut c_void, AlignedFn>(sym(
                    b"mi_malloc_aligned\0",
                )?),
                zalloc_aligned: std::mem::transmute::<*mut c_void, AlignedFn>(sym(
                    b"mi_zalloc_aligned\0",
                )?),
                realloc: std::mem::transmute::<*mut c_void, ReallocFn>(sym(b"mi_realloc\0")?),
                realloc_aligned: std::mem::transmute::<*mut c_void, ReallocAlignedFn>(sym(
                    b"mi_realloc_aligned\0",
                )?),
                free: std::mem::transmute::<*mut c_void, FreeFn>(sym(b"mi_free\0")?),
                version: std::mem::transmute::<*mut c_void, VersionFn>(sym(b"mi_version\0")?),
            })
        }
    }

    /// mimalloc's version as "MAJOR.MINOR.PATCH" (mi_version()).
    pub fn version(&self) -> String {
        let v = unsafe { (self.version)() };
        format!("{}.{}.{}", v / 100, v / 10 % 10, v % 10)
    }
}

unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.align() <= MI_MAX_ALIGN {
            (self.malloc)(l.size()) as *mut u8
        } else {
            (self.malloc_aligned)(l.size(), l.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, _l: Layout) {
        (self.free)(p as *mut c_void)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.align() <= MI_MAX_ALIGN {
            (self.zalloc)(l.size()) as *mut u8
        } else {
            (self.zalloc_aligned)(l.size(), l.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        if l.align() <= MI_MAX_ALIGN {
            (self.realloc)(p as *mut c_void, new_size) as *mut u8
        } else {
            (self.realloc_aligned)(p as *mut c_void, new_size, l.align()) as *mut u8
        }
    }
}

/// Blocks per iteration of the churn workloads.
pub const CHURN: usize = 1024;
/// Live blocks of the steady churn: each new block replaces the oldest of this window.
pub const WINDOW: usize = 64;
/// Elements the vector grows to.
pub const VEC_LEN: usize = 512;
/// The block sizes of the churn rows.
pub const SIZES: [usize; 4] = [16, 64, 256, 1024];

/// A row of the benchmark, without its thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// [`churn_bulk`] at a size.
    Bulk(usize),
    /// [`churn_steady`] with `WINDOW` live blocks, at a size.
    Steady(usize),
    /// [`churn_steady`] with one live block: each new block right after the previous one's
    /// free, the pattern a thread cache of a few blocks (glibc's tcache) serves best.
    Pairs(usize),
    /// [`vec_grow`].
    VecGrow,
}

impl Workload {
    /// Every row, in the table's order.
    pub fn all() -> Vec<Workload> {
        let mut v: Vec<Workload> = SIZES.iter().map(|&s| Workload::Bulk(s)).collect();
        v.extend(SIZES.iter().map(|&s| Workload::Steady(s)));
        v.extend(SIZES.iter().map(|&s| Workload::Pairs(s)));
        v.push(Workload::VecGrow);
        v
    }

    /// The row's name: bulk_16B, steady_64B, pairs_1024B, vec_grow_512.
    pub fn name(&self) -> String {
        match *self {
            Workload::Bulk(s) => format!("bulk_{}B", s),
            Workload::Steady(s) => format!("steady_{}B", s),
            Workload::Pairs(s) => format!("pairs_{}B", s),
            Workload::VecGrow => format!("vec_grow_{}", VEC_LEN),
        }
    }

    /// The workload of a name `name()` gives.
    pub fn parse(name: &str) -> Option<Workload> {
        Workload::all().into_iter().find(|w| w.name() == name)
    }
}

/// `iters` iterations of `w` through `a` on this thread (a steady window is filled before
/// and emptied after).
pub fn run<A: GlobalAlloc>(a: &A, w: Workload, iters: u64) {
    let layout = |size| Layout::from_size_align(size, 8).unwrap();
    let window = |l, n| -> Vec<*mut u8> { (0..n).map(|_| unsafe { a.alloc(l) }).collect() };
    match w {
        Workload::Bulk(size) => {
            let mut ptrs = vec![std::ptr::null_mut(); CHURN];
            for _ in 0..iters {
                churn_bulk(a, layout(size), &mut ptrs);
            }
        }
        Workload::Steady(size) | Workload::Pairs(size) => {
            let l = layout(size);
            let mut live = window(l, if let Workload::Pairs(_) = w { 1 } else { WINDOW });
            for _ in 0..iters {
                churn_steady(a, l, &mut live);
            }
            for p in live {
                unsafe { a.dealloc(p, l) };
            }
        }
        Workload::VecGrow => {
            for _ in 0..iters {
                black_box(vec_grow(a));
            }
        }
    }
}

/// Bulk churn: `CHURN` blocks of one layout allocated, then freed in the same order.
#[inline(never)]
pub fn churn_bulk<A: GlobalAlloc>(a: &A, l: Layout, ptrs: &mut [*mut u8]) {
    for p in ptrs.iter_mut() {
        *p = black_box(unsafe { a.alloc(l) });
    }
    for &p in ptrs.iter() {
        unsafe { a.dealloc(black_box(p), l) };
    }
}

/// Steady churn: `CHURN` pairs, each freeing the oldest of the live blocks in `window` and
/// allocating its replacement.
#[inline(never)]
pub fn churn_steady<A: GlobalAlloc>(a: &A, l: Layout, window: &mut [*mut u8]) {
    let n = window.len();
    for i in 0..CHURN {
        let slot = &mut window[i % n];
        unsafe {
            a.dealloc(black_box(*slot), l);
            *slot = black_box(a.alloc(l));
        }
    }
}

/// A `Vec<i64>` pushed to `VEC_LEN` elements the way `Vec` grows (4 elements first, then
/// doubling, through `realloc`), summed, freed. Returns the sum.
#[inline(never)]
pub fn vec_grow<A: GlobalAlloc>(a: &A) -> i64 {
    let elem = std::mem::size_of::<i64>();
    let mut cap = 4;
    let mut l = Layout::from_size_align(cap * elem, std::mem::align_of::<i64>()).unwrap();
    let mut p = black_box(unsafe { a.alloc(l) }) as *mut i64;
    for i in 0..VEC_LEN {
        if i == cap {
            let q = unsafe { a.realloc(p as *mut u8, l, 2 * cap * elem) };
            p = black_box(q) as *mut i64;
            cap *= 2;
            l = Layout::from_size_align(cap * elem, l.align()).unwrap();
        }
        unsafe { p.add(i).write(i as i64) };
    }
    let sum = (0..VEC_LEN).map(|i| unsafe { p.add(i).read() }).sum();
    unsafe { a.dealloc(black_box(p) as *mut u8, l) };
    sum
}

/// The time of `iters` runs of `work` on each of `threads` threads at once: the threads are
/// made first and start together; the clock runs from the start to the last one's end.
pub fn on_threads<F: Fn(u64) + Sync>(threads: usize, iters: u64, work: F) -> Duration {
    let go = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    go.wait();
                    work(iters)
                })
            })
            .collect();
        go.wait();
        let t0 = Instant::now();
        for h in hs {
            h.join().unwrap();
        }
        t0.elapsed()
    })
}

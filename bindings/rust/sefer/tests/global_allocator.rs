// SPDX-License-Identifier: MIT
//! sefer as the program's `#[global_allocator]`, under a realistic mix: a HashMap of strings to
//! byte vectors churned, trait objects, Arcs whose last reference goes on other threads,
//! scoped workers. Every live object is checked to lie in sefer's memory (`sefer::owns`, which
//! says false for the system allocator's blocks: checked first), and sefer's counters must
//! move by what the program did: one large allocation per large vector, two cross-thread frees
//! per Arc. One test function, run in order (`harness = false` would lose cargo's summary
//! line; a single #[test] keeps the counters free of other tests).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::{mpsc, Arc};
use std::thread;

use sefer::Sefer;

#[global_allocator]
static GLOBAL: Sefer = Sefer;

fn owned<T: ?Sized>(p: *const T) -> bool {
    sefer::owns(p as *const u8)
}

/// A linear congruential generator: reproducible churn without a crate.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
}

fn hashmap_churn() {
    let mut rng = Lcg(42);
    let mut map: HashMap<String, Vec<u8>> = HashMap::new();
    for round in 0..200_000 {
        let k = format!("key-{}", rng.next() % 5000);
        let n = [0, 3, 40, 700, 5000, 70_000][rng.next() % 6];
        if round % 3 == 0 {
            map.remove(&k);
        } else {
            let v = vec![(round & 0xff) as u8; n];
            map.insert(k, v);
        }
    }
    let mut checked = 0;
    for (k, v) in &map {
        assert!(owned(k.as_ptr()), "a key's bytes are not sefer's");
        assert_eq!(v.iter().filter(|&&b| b != v[0]).count(), 0);
        if v.capacity() > 0 {
            assert!(owned(v.as_ptr()), "a value's buffer is not sefer's");
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {} values", checked);
    println!(
        "ok   HashMap<String, Vec<u8>> churn: {} entries, every key and buffer sefer's",
        map.len()
    );
}

trait Shape: Send {
    fn area(&self) -> f64;
}
struct Square(f64);
struct Poly(Vec<(f64, f64)>);
struct Big([u64; 300]);
impl Shape for Square {
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}
impl Shape for Poly {
    fn area(&self) -> f64 {
        let n = self.0.len();
        (0..n)
            .map(|i| self.0[i].0 * self.0[(i + 1) % n].1 - self.0[(i + 1) % n].0 * self.0[i].1)
            .sum::<f64>()
            / 2.0
    }
}
impl Shape for Big {
    fn area(&self) -> f64 {
        self.0.iter().sum::<u64>() as f64
    }
}

fn trait_objects() {
    let shapes: Vec<Box<dyn Shape>> = (0..3000)
        .map(|i| -> Box<dyn Shape> {
            match i % 3 {
                0 => Box::new(Square(i as f64)),
                1 => Box::new(Poly(vec![(0.0, 0.0), (i as f64, 0.0), (0.0, 2.0)])),
                _ => Box::new(Big([i as u64; 300])),
            }
        })
        .collect();
    assert!(owned(shapes.as_ptr()));
    for (i, s) in shapes.iter().enumerate() {
        assert!(owned(&**s as *const dyn Shape), "Box<dyn Shape> {} not sefer's", i);
    }
    let total: f64 = shapes.iter().map(|s| s.area()).sum();
    assert!(total > 0.0);
    println!("ok   Box<dyn Shape>: 3000 trait objects of three sizes, each sefer's");
}

/// Arcs made here, whose last reference is dropped by workers: each drop frees the Arc's block
/// and its vector's buffer, both allocated by this thread, so sefer counts two cross-thread
/// frees per Arc at least.
fn arcs_dropped_elsewhere() {
    const N: usize = 4000;
    let before = sefer::stats().xthread_frees;
    let (txs, handles): (Vec<_>, Vec<_>) = (0..4)
        .map(|_| {
            let (tx, rx) = mpsc::channel::<Arc<Vec<u8>>>();
            // Held until the channel closes, which is after this thread dropped its own
            // references: the workers' drops are the last ones.
            (
                tx,
                thread::spawn(move || {
                    rx.into_iter().collect::<Vec<_>>().iter().map(|a| a.len()).sum::<usize>()
                }),
            )
        })
        .unzip();
    let arcs: Vec<Arc<Vec<u8>>> = (0..N).map(|i| Arc::new(vec![1u8; 100 + i % 500])).collect();
    for a in &arcs {
        assert!(owned(Arc::as_ptr(a)) && owned(a.as_ptr()));
    }
    for (i, a) in arcs.iter().enumerate() {
        txs[i % 4].send(Arc::clone(a)).unwrap();
    }
    drop(arcs); // the workers hold the last references now
    drop(txs);
    let bytes: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(bytes, (0..N).map(|i| 100 + i % 500).sum());
    let xf = sefer::stats().xthread_frees - before;
    assert!(xf >= 2 * N as u64, "{} Arcs dropped on workers, {} cross-thread frees", N, xf);
    assert!(
        xf <= 3 * N as u64,
        "{} cross-thread frees for {} Arcs: counted from elsewhere?",
        xf,
        N
    );
    println!("ok   Arc dropped on other threads: {} cross-thread frees for {} Arcs", xf, N);
}

fn scoped_workers() {
    let words: Vec<String> = (0..20_000).map(|i| format!("w{}", i * 7)).collect();
    let chunks: Vec<&[String]> = words.chunks(5000).collect();
    let results: Vec<(usize, HashMap<usize, Vec<String>>)> = thread::scope(|s| {
        let hs: Vec<_> = chunks
            .iter()
            .map(|c| {
                s.spawn(move || {
                    let mut by_len: HashMap<usize, Vec<String>> = HashMap::new();
                    for w in c.iter() {
                        by_len.entry(w.len()).or_default().push(w.to_uppercase());
                    }
                    let bad = by_len.values().flatten().filter(|w| !owned(w.as_ptr())).count();
                    (bad, by_len)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut n = 0;
    for (bad, m) in &results {
        assert_eq!(*bad, 0, "a worker's string is not sefer's");
        for v in m.values() {
            assert!(owned(v.as_ptr()));
            n += v.len();
        }
    }
    assert_eq!(n, words.len());
    println!("ok   thread::scope: 4 workers, {} strings made on workers, each sefer's", n);
}

/// Large vectors: sefer serves each from a dedicated segment, so its large-allocation counter
/// moves by exactly their number.
fn large_counted() {
    const K: u64 = 12;
    let before = sefer::stats().large_allocs;
    let vs: Vec<Vec<u8>> = (0..K).map(|i| vec![i as u8; 8 << 20]).collect();
    let delta = sefer::stats().large_allocs - before;
    for v in &vs {
        assert!(owned(v.as_ptr()) && v[(8 << 20) - 1] == v[0]);
    }
    assert_eq!(delta, K, "{} large vectors, large_allocs moved by {}", K, delta);
    println!("ok   {} vectors of 8 MiB: sefer's large_allocs moved by {}", K, delta);
}

#[test]
fn sefer_is_the_global_allocator() {
    let l = Layout::from_size_align(64, 8).unwrap();
    let sys = unsafe { System.alloc(l) };
    assert!(!sefer::owns(sys), "sefer::owns says true of the system allocator's block");
    unsafe { System.dealloc(sys, l) };
    let b = Box::new(7u64);
    assert!(owned(&*b), "Box is not sefer's: the global allocator is not in use");
    let args: Vec<String> = std::env::args().collect();
    assert!(owned(args.as_ptr()));

    hashmap_churn();
    trait_objects();
    arcs_dropped_elsewhere();
    scoped_workers();
    large_counted();
    assert_eq!(sefer::check_heap(), 0, "sefer's invariants after the mix");
}

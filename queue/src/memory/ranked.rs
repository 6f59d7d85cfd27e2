//! An ordered set with rank, for the embedded store's line: insert, remove,
//! rank and pick by index all in O(log n), so a status at the back of a
//! million-long line costs what one at the front does.
//!
//! A treap (a binary search tree balanced by random priorities) with subtree
//! sizes, in an arena of nodes, and in front of it a short sorted tail of
//! the newest entries above all of the tree's. Keys order exactly as a
//! Redis sorted set orders its entries: by score, then by member as text,
//! so the embedded store and Redis give the same positions.
//!
//! Why the tail: nearly every place is taken at the back of the line (after
//! the opening a place's score is above every other), and putting it in
//! the tree writes the size of every node down the tree's right edge. With
//! joins served on both cores, those lines went from one core's cache to
//! the other's on every join (most of the embedded join's time in the
//! store). A push onto the tail writes one line; the tail goes into the
//! tree `TAIL` entries at a time, on one core.

#![allow(
    clippy::indexing_slicing,
    reason = "node ids are this arena's own, never a client's; every link names a live node"
)]

use std::cmp::Ordering;
use std::collections::VecDeque;

use super::Member;

/// A sorted-set entry: a score and a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The order in line.
    pub score: u64,
    /// The visitor's member (not its sequence number).
    pub member: Member,
}

/// Decimal digits of `n`, as Redis stores a member.
fn digits(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.cmp(&other.score).then_with(|| {
            // Ties are broken as Redis does: members compared as text ("10" < "9").
            let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
            digits(self.member.0, &mut a).cmp(digits(other.member.0, &mut b))
        })
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    entry: Entry,
    priority: u32,
    size: u32,
    left: u32,
    right: u32,
}

/// Most entries the tail holds before they go into the tree.
const TAIL: usize = 1024;

/// The ordered set. Callers keep their own member -> score map and only
/// remove entries that are present.
#[derive(Default)]
pub struct RankedSet {
    tree: Treap,
    /// Entries above every entry of the tree, in order (a deque: a short
    /// line lives in the tail alone and is let in from its front).
    tail: VecDeque<Entry>,
}

impl RankedSet {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.tree.len() + self.tail.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty() && self.tail.is_empty()
    }

    /// Adds an entry (not already present).
    pub fn insert(&mut self, entry: Entry) {
        let above_all = match self.tail.back() {
            Some(last) => entry > *last,
            None => self.tree.last().is_none_or(|last| entry > last),
        };
        if above_all {
            if self.tail.len() == TAIL {
                self.flush();
            }
            self.tail.push_back(entry);
        } else if self.tail.front().is_some_and(|first| entry > *first) {
            // Among the tail's entries (never, for scores as the stores
            // give them): the tail goes into the tree first.
            self.flush();
            self.tree.insert(entry);
        } else {
            self.tree.insert(entry);
        }
    }

    fn flush(&mut self) {
        for entry in self.tail.drain(..) {
            self.tree.insert(entry);
        }
    }

    /// Removes an entry; false when it was not there.
    pub fn remove(&mut self, entry: &Entry) -> bool {
        match self.tail.front() {
            Some(first) if *entry >= *first => match self.tail.binary_search(entry) {
                Ok(i) => self.tail.remove(i).is_some(),
                Err(_) => false,
            },
            _ => self.tree.remove(entry),
        }
    }

    /// How many entries order before `entry`.
    pub fn rank(&self, entry: &Entry) -> usize {
        if self.tail.back() == Some(entry) {
            // The place just taken, as a join asks right after it.
            return self.len() - 1;
        }
        match self.tail.front() {
            Some(first) if *entry >= *first => {
                let (Ok(i) | Err(i)) = self.tail.binary_search(entry);
                self.tree.len() + i
            }
            _ => self.tree.rank(entry),
        }
    }

    /// The entry at 0-based index `i` in order.
    pub fn nth(&self, i: usize) -> Option<Entry> {
        match i.checked_sub(self.tree.len()) {
            Some(j) => self.tail.get(j).copied(),
            None => self.tree.nth(i),
        }
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<Entry> {
        self.nth(0)
    }
}

/// The tree: a treap with subtree sizes, in an arena.
struct Treap {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u64,
}

impl Default for Treap {
    fn default() -> Self {
        Treap {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl Treap {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.size(self.root) as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    fn size(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size
        }
    }

    fn fix(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        self.nodes[t as usize].size = 1 + self.size(n.left) + self.size(n.right);
    }

    fn next_priority(&mut self) -> u32 {
        // xorshift64*: priorities only need to look random, not be secret.
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        (self.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    /// Splits `t` into entries `< key` and entries `>= key`. Each node on
    /// the way loses the size of the part split off it, so the sizes of the
    /// subtrees it does not walk are never read (a cache miss each, at a
    /// million entries).
    fn split(&mut self, t: u32, key: &Entry) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let node = self.nodes[t as usize];
        if node.entry < *key {
            let (l, r) = self.split(node.right, key);
            let lost = self.size(r);
            let n = &mut self.nodes[t as usize];
            n.right = l;
            n.size -= lost;
            (t, r)
        } else {
            let (l, r) = self.split(node.left, key);
            let lost = self.size(l);
            let n = &mut self.nodes[t as usize];
            n.left = r;
            n.size -= lost;
            (l, t)
        }
    }

    /// Joins two trees where every entry of `a` is below every entry of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let right = self.nodes[a as usize].right;
            let m = self.merge(right, b);
            self.nodes[a as usize].right = m;
            self.fix(a);
            a
        } else {
            let left = self.nodes[b as usize].left;
            let m = self.merge(a, left);
            self.nodes[b as usize].left = m;
            self.fix(b);
            b
        }
    }

    /// Adds an entry (not already present): down from the root while the
    /// nodes outrank the new one (each gains one entry below it), then the
    /// subtree found there is split around the entry and hung under it. A
    /// place taken after the opening is above every entry, so the walk is
    /// the line's right edge, which every such join walks: hot in cache.
    pub fn insert(&mut self, entry: Entry) {
        let priority = self.next_priority();
        let (mut parent, mut right) = (NIL, false);
        let mut t = self.root;
        while t != NIL && self.nodes[t as usize].priority > priority {
            let node = &mut self.nodes[t as usize];
            node.size += 1;
            parent = t;
            right = node.entry < entry;
            t = if right { node.right } else { node.left };
        }
        let (left, rest) = self.split(t, &entry);
        let node = Node {
            entry,
            priority,
            size: 1 + self.size(left) + self.size(rest),
            left,
            right: rest,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        if parent == NIL {
            self.root = id;
        } else if right {
            self.nodes[parent as usize].right = id;
        } else {
            self.nodes[parent as usize].left = id;
        }
    }

    /// Removes an entry; false when it was not there.
    pub fn remove(&mut self, entry: &Entry) -> bool {
        let (below, rest) = self.split(self.root, entry);
        // Entries are unique, so `mid` is the entry's node or nothing.
        let (mid, above) = self.split_after(rest, entry);
        if mid != NIL {
            self.free.push(mid);
        }
        self.root = self.merge(below, above);
        mid != NIL
    }

    /// Splits `t` into entries `<= key` and entries `> key` (sizes as in
    /// [`RankedSet::split`]).
    fn split_after(&mut self, t: u32, key: &Entry) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let node = self.nodes[t as usize];
        if node.entry <= *key {
            let (l, r) = self.split_after(node.right, key);
            let lost = self.size(r);
            let n = &mut self.nodes[t as usize];
            n.right = l;
            n.size -= lost;
            (t, r)
        } else {
            let (l, r) = self.split_after(node.left, key);
            let lost = self.size(l);
            let n = &mut self.nodes[t as usize];
            n.left = r;
            n.size -= lost;
            (l, t)
        }
    }

    /// How many entries order before `entry`.
    pub fn rank(&self, entry: &Entry) -> usize {
        let mut t = self.root;
        let mut below = 0;
        while t != NIL {
            let node = &self.nodes[t as usize];
            if node.entry < *entry {
                below += self.size(node.left) as usize + 1;
                t = node.right;
            } else {
                t = node.left;
            }
        }
        below
    }

    fn nth_in(&self, mut t: u32, mut i: usize) -> Option<Entry> {
        while t != NIL {
            let node = &self.nodes[t as usize];
            let left = self.size(node.left) as usize;
            match i.cmp(&left) {
                Ordering::Less => t = node.left,
                Ordering::Equal => return Some(node.entry),
                Ordering::Greater => {
                    i -= left + 1;
                    t = node.right;
                }
            }
        }
        None
    }

    /// The entry at 0-based index `i` in order.
    pub fn nth(&self, i: usize) -> Option<Entry> {
        self.nth_in(self.root, i)
    }

    /// The largest entry.
    fn last(&self) -> Option<Entry> {
        let mut t = self.root;
        let mut last = None;
        while t != NIL {
            let node = &self.nodes[t as usize];
            last = Some(node.entry);
            t = node.right;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn e(score: u64, member: u64) -> Entry {
        Entry {
            score,
            member: Member(member),
        }
    }

    #[test]
    fn ties_order_by_member_text_as_redis_does() {
        assert!(e(5, 10) < e(5, 9));
        assert!(e(4, 9) < e(5, 10));
        assert!(e(5, 1) < e(5, 10));
    }

    #[test]
    fn matches_a_sorted_model_under_random_operations() {
        let mut set = RankedSet::default();
        let mut model: BTreeSet<Entry> = BTreeSet::new();
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let entry = e((x >> 33) % 500, (x >> 20) % 300);
            if (x >> 60).is_multiple_of(3) {
                assert_eq!(set.remove(&entry), model.remove(&entry));
            } else if model.insert(entry) {
                set.insert(entry);
            }
            assert_eq!(set.len(), model.len());
            if (x >> 40).is_multiple_of(500) {
                for (i, entry) in model.iter().enumerate() {
                    assert_eq!(set.rank(entry), i);
                    assert_eq!(set.nth(i), Some(*entry));
                }
            }
        }
        for (i, entry) in model.iter().enumerate() {
            assert_eq!(set.rank(entry), i);
            assert_eq!(set.nth(i), Some(*entry));
        }
        assert_eq!(set.first(), model.iter().next().copied());
    }

    #[test]
    fn a_line_that_grows_at_its_back_and_is_let_in_from_its_front_keeps_its_ranks() {
        // As a line lives: places taken at the back, admissions from the
        // front, now and then a leaver in the middle.
        let mut set = RankedSet::default();
        let mut model: BTreeSet<Entry> = BTreeSet::new();
        for m in 1..30_000u64 {
            // After the opening a place's score is span + member.
            set.insert(e((1 << 40) + m, m));
            model.insert(e((1 << 40) + m, m));
            if m % 3 == 0 {
                let front = *model.iter().next().unwrap();
                assert_eq!(set.first(), Some(front));
                assert!(set.remove(&front) && model.remove(&front));
            }
            if m % 7 == 0 {
                // A new place left at once (from the tail).
                let newest = *model.iter().next_back().unwrap();
                assert_eq!(set.rank(&newest), model.len() - 1);
                assert!(set.remove(&newest) && model.remove(&newest));
                assert!(!set.remove(&newest));
            }
            if m % 101 == 0 {
                let middle = *model.iter().nth(model.len() / 2).unwrap();
                assert!(set.remove(&middle) && model.remove(&middle));
            }
        }
        assert_eq!(set.len(), model.len());
        for (i, entry) in model.iter().enumerate().step_by(97) {
            assert_eq!(set.rank(entry), i);
            assert_eq!(set.nth(i), Some(*entry));
        }
    }
}

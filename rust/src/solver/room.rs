//! The room each open claim has left under its chosen flavor, indexed so that a pod finds the first
//! claim it fits in without looking at every full one. A segment tree over claim positions keeps, per
//! resource, the most room of any claim below each node; a subtree where some requested resource has
//! too little room everywhere is skipped whole. A pure speed-up: the greedy pass visits the same claims
//! in the same order as a scan that rejects the full ones one by one.

/// Subtrees of at most this many claims are scanned, not descended.
const SCAN: usize = 32;

pub struct RoomIndex {
    /// Resources per claim (the width of the dense vectors).
    width: usize,
    /// Leaves in the tree (a power of two, at least one).
    leaves: usize,
    /// Claims indexed; positions from `len` on hold no claim.
    len: usize,
    /// Node `n` (1 the root, `2n` and `2n+1` its children) at `n * width`.
    tree: Vec<i64>,
    /// Set when claims moved without the index hearing of it; rebuilt before its next use.
    pub stale: bool,
}

impl RoomIndex {
    pub fn new(width: usize) -> RoomIndex {
        RoomIndex {
            width,
            leaves: 1,
            len: 0,
            tree: vec![i64::MIN; 2 * width],
            stale: false,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index these rooms, one per claim in order, from scratch.
    pub fn rebuild(&mut self, rooms: impl ExactSizeIterator<Item = Vec<i64>>) {
        self.rebuild_for(rooms.len(), rooms);
    }

    /// The same, with leaves for at least `capacity` claims.
    fn rebuild_for(&mut self, capacity: usize, rooms: impl ExactSizeIterator<Item = Vec<i64>>) {
        let count = rooms.len();
        self.leaves = capacity.max(count).max(1).next_power_of_two();
        self.len = count;
        self.tree = vec![i64::MIN; 2 * self.leaves * self.width];
        for (at, room) in rooms.enumerate() {
            let node = (self.leaves + at) * self.width;
            self.tree[node..node + self.width].copy_from_slice(&room);
        }
        for node in (1..self.leaves).rev() {
            self.pull(node);
        }
        self.stale = false;
    }

    fn pull(&mut self, node: usize) {
        let w = self.width;
        for d in 0..w {
            let left = self.tree[2 * node * w + d];
            let right = self.tree[(2 * node + 1) * w + d];
            self.tree[node * w + d] = left.max(right);
        }
    }

    /// The claim at `at` now has this room (`at == len` appends a claim).
    pub fn set(&mut self, at: usize, room: &[i64]) {
        if self.stale || at > self.len {
            self.stale = true;
            return;
        }
        if at == self.leaves {
            let w = self.width;
            let kept: Vec<Vec<i64>> = (0..self.len)
                .map(|i| {
                    let node = (self.leaves + i) * w;
                    self.tree[node..node + w].to_vec()
                })
                .collect();
            self.rebuild_for(2 * self.leaves, kept.into_iter());
        }
        self.len = self.len.max(at + 1);
        let mut node = self.leaves + at;
        self.tree[node * self.width..(node + 1) * self.width].copy_from_slice(room);
        while node > 1 {
            node /= 2;
            self.pull(node);
        }
    }

    fn admits(&self, node: usize, request: &[i64]) -> bool {
        let room = &self.tree[node * self.width..(node + 1) * self.width];
        request.iter().zip(room).all(|(r, a)| *r == 0 || r <= a)
    }

    /// The first claim at or after `from` whose room takes the request (every nonzero amount fits).
    pub fn first_fit(&self, from: usize, request: &[i64]) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        self.descend(1, 0, self.leaves, from, request)
    }

    fn descend(
        &self,
        node: usize,
        low: usize,
        high: usize,
        from: usize,
        request: &[i64],
    ) -> Option<usize> {
        if high <= from || !self.admits(node, request) {
            return None;
        }
        if high - low <= SCAN {
            // Near the leaves a plain scan is cheaper than pruning: when different claims hold the
            // most room in different resources, every subtree passes and the descent visits them all.
            let w = self.width;
            return (from.max(low)..high.min(self.len)).find(|&at| {
                let leaf = (self.leaves + at) * w;
                let room = &self.tree[leaf..leaf + w];
                request.iter().zip(room).all(|(r, a)| *r == 0 || r <= a)
            });
        }
        let middle = (low + high) / 2;
        self.descend(2 * node, low, middle, from, request)
            .or_else(|| self.descend(2 * node + 1, middle, high, from, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(rooms: &[Vec<i64>], from: usize, request: &[i64]) -> Option<usize> {
        (from..rooms.len()).find(|&i| {
            request
                .iter()
                .zip(&rooms[i])
                .all(|(r, a)| *r == 0 || r <= a)
        })
    }

    #[test]
    fn finds_what_a_scan_finds() {
        let mut rooms: Vec<Vec<i64>> = Vec::new();
        let mut index = RoomIndex::new(2);
        let mut seed: u64 = 7;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as i64 % 10
        };
        for step in 0..300 {
            if step % 3 == 0 || rooms.is_empty() {
                rooms.push(vec![next(), next() - 2]);
                let at = rooms.len() - 1;
                index.set(at, &rooms[at]);
            } else {
                let at = (next() as usize * 31 + step) % rooms.len();
                rooms[at] = vec![next(), next() - 2];
                index.set(at, &rooms[at]);
            }
            let request = [next() % 7, if step % 4 == 0 { 0 } else { next() % 6 }];
            for from in [0, rooms.len() / 3, rooms.len()] {
                assert_eq!(
                    index.first_fit(from, &request),
                    scan(&rooms, from, &request)
                );
            }
        }
        index.stale = true;
        index.rebuild(rooms.clone().into_iter());
        assert_eq!(index.len(), rooms.len());
        assert_eq!(index.first_fit(0, &[3, 3]), scan(&rooms, 0, &[3, 3]));
    }
}

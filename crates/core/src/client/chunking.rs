//! Splitting a `forward_backward` batch into requests, as the Python SDK 0.38 does:
//! greedily, in order, starting a new chunk when the current one already holds
//! `fwdbwd_max_chunk_len` datums or when adding the next datum would push the
//! estimated (uncompressed protobuf) size past `fwdbwd_max_chunk_bytes_count`.

use std::ops::Range;

use crate::types::Datum;

/// One planned request: which datums, and their estimated bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Indices into the batch.
    pub range: Range<usize>,
    /// Estimated request bytes (for the dispatch byte budget).
    pub estimated_bytes: usize,
}

/// Plans the chunks of a batch.
pub fn plan_chunks(data: &[Datum], max_len: usize, max_bytes: usize) -> Vec<Chunk> {
    plan_chunks_by_size(
        &data.iter().map(Datum::estimated_bytes).collect::<Vec<_>>(),
        max_len,
        max_bytes,
    )
}

/// Plans chunks from per-datum byte estimates.
pub fn plan_chunks_by_size(sizes: &[usize], max_len: usize, max_bytes: usize) -> Vec<Chunk> {
    let max_len = max_len.max(1);
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0usize, 0usize);
    for (i, &size) in sizes.iter().enumerate() {
        let len = i - start;
        if (len > 0 && bytes + size > max_bytes) || len == max_len {
            chunks.push(Chunk {
                range: start..i,
                estimated_bytes: bytes,
            });
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < sizes.len() {
        chunks.push(Chunk {
            range: start..sizes.len(),
            estimated_bytes: bytes,
        });
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_count() {
        let c = plan_chunks_by_size(&[1; 5], 2, 1000);
        assert_eq!(
            c.iter().map(|c| c.range.clone()).collect::<Vec<_>>(),
            vec![0..2, 2..4, 4..5]
        );
        let c = plan_chunks_by_size(&[1; 2049], 1024, usize::MAX);
        assert_eq!(
            c.iter().map(|c| c.range.len()).collect::<Vec<_>>(),
            vec![1024, 1024, 1]
        );
    }

    #[test]
    fn by_bytes_lets_an_oversized_datum_alone() {
        let c = plan_chunks_by_size(&[4, 4, 10, 1, 1], 100, 8);
        assert_eq!(
            c.iter()
                .map(|c| (c.range.clone(), c.estimated_bytes))
                .collect::<Vec<_>>(),
            vec![(0..2, 8), (2..3, 10), (3..5, 2)]
        );
        assert!(plan_chunks_by_size(&[], 10, 10).is_empty());
    }
}

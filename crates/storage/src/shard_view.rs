//! A view of storage that selects only one shard of every select's series:
//! a node's share of a query cut by series over several nodes.

use std::sync::Arc;

use cairn_model::Matcher;

use crate::StorageError;
use crate::query::{Querier, Queryable, SelectHints, SeriesSet, Shard};

pub struct ShardView {
    inner: Arc<dyn Queryable>,
    shard: Shard,
}

impl ShardView {
    pub fn new(inner: Arc<dyn Queryable>, shard: Shard) -> Self {
        Self { inner, shard }
    }
}

impl Queryable for ShardView {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(ShardQuerier {
            inner: self.inner.querier(mint, maxt)?,
            shard: self.shard.clone(),
        }))
    }

    fn settled_changes(&self) -> Option<u64> {
        self.inner.settled_changes()
    }
}

struct ShardQuerier {
    inner: Box<dyn Querier>,
    shard: Shard,
}

impl Querier for ShardQuerier {
    /// The shard goes down to storage (which reads only its series) when the
    /// select has none of its own, or one placed by the same labels: that
    /// one's slices are then cut out of this shard's (slices are ranges of
    /// one hash). Otherwise the select's series are filtered here.
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        let nested = hints.shard.as_ref().and_then(|local| {
            let count = self.shard.count.checked_mul(local.count)?;
            (local.by == self.shard.by).then(|| Shard {
                index: self.shard.index * local.count + local.index,
                count,
                by: local.by.clone(),
            })
        });
        let shard = match (&hints.shard, nested) {
            (None, _) => self.shard.clone(),
            (Some(_), Some(nested)) => nested,
            (Some(_), None) => {
                let shard = self.shard.clone();
                let all = self.inner.select(hints, matchers)?;
                return Ok(Box::new(
                    all.filter(move |s| s.as_ref().map_or(true, |s| shard.contains(&s.labels))),
                ));
            }
        };
        let hints = SelectHints {
            shard: Some(shard),
            ..hints.clone()
        };
        self.inner.select(&hints, matchers)
    }

    fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
        self.inner.series_upper_bound(matchers)
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        self.inner.label_names(matchers, limit)
    }

    fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        limit: Option<usize>,
    ) -> Result<Vec<String>, StorageError> {
        self.inner.label_values(name, matchers, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ShardBy;
    use crate::{Appendable, MemStorage};
    use cairn_model::{Labels, Sample};

    fn names(q: &dyn Querier, hints: &SelectHints) -> Vec<Labels> {
        let all = [Matcher::equal("__name__", "m")];
        q.select(hints, &all).unwrap().map(|s| s.unwrap().labels).collect()
    }

    #[test]
    fn the_shards_of_a_view_partition_its_series_however_selects_are_sharded_within() {
        let storage = Arc::new(MemStorage::new());
        let mut app = storage.appender();
        for i in 0..200 {
            let labels = Labels::from_pairs([("__name__", "m"), ("g", &(i % 7).to_string()), ("i", &i.to_string())]);
            app.append(&labels, &[Sample::new(1, 1.0)]).unwrap();
        }
        app.commit().unwrap();
        let by = Some(Arc::new(ShardBy::Labels(vec!["g".into()])));
        let whole = names(storage.querier(0, 10).unwrap().as_ref(), &SelectHints::default());
        for local in [None, Some(None), Some(by.clone())] {
            let mut seen = Vec::new();
            for index in 0..3 {
                let shard = Shard {
                    index,
                    count: 3,
                    by: by.clone(),
                };
                let view = ShardView::new(storage.clone(), shard.clone());
                let q = view.querier(0, 10).unwrap();
                let mut part = Vec::new();
                match &local {
                    None => part = names(q.as_ref(), &SelectHints::default()),
                    Some(local_by) => {
                        for j in 0..2 {
                            let hints = SelectHints {
                                shard: Some(Shard {
                                    index: j,
                                    count: 2,
                                    by: local_by.clone(),
                                }),
                                ..SelectHints::default()
                            };
                            part.extend(names(q.as_ref(), &hints));
                        }
                    }
                }
                assert!(part.iter().all(|l| shard.contains(l)), "{local:?}");
                seen.extend(part);
            }
            seen.sort();
            assert_eq!(seen, whole, "{local:?}");
        }
    }
}

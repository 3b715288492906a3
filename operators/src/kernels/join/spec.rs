//! What a join computes ([`JoinSpec`]: its type, residual filter, build side, input types and
//! output columns), and what its type means for each build side ([`Roles`]: which matches are
//! recorded, what is output when), which both join kernels and their shared output follow.

use crate::plan::{JoinSide, JoinType};
use crate::{DataType, Expr};

/// What a join computes, apart from its keys: the plan's join type, residual filter, build
/// side and input column types.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinSpec {
    /// What the join outputs.
    pub join_type: JoinType,
    /// Predicate over left columns then right columns that a candidate pair must satisfy
    /// (NULL counts as false).
    pub filter: Option<Expr>,
    /// The input held in memory.
    pub build: JoinSide,
    /// Column types of the left input, for the NULL columns of unmatched right rows (the
    /// types of the first left batch take precedence).
    pub left_types: Vec<DataType>,
    /// Column types of the right input, for the NULL columns of unmatched left rows.
    pub right_types: Vec<DataType>,
    /// The positions, ascending, of the output columns (left input's then right input's, or
    /// the left input's alone for semi and anti joins) that the join emits; `None` emits them
    /// all. A column left out is never gathered.
    pub output: Option<Vec<usize>>,
}

impl JoinSpec {
    /// An inner join without residual filter, building `build`.
    pub fn inner(build: JoinSide) -> Self {
        JoinSpec::new(JoinType::Inner, build)
    }

    /// A `join_type` join without residual filter, building `build`, with no input types
    /// (set them with [`JoinSpec::with_types`] for outer joins).
    pub fn new(join_type: JoinType, build: JoinSide) -> Self {
        JoinSpec {
            join_type,
            filter: None,
            build,
            left_types: Vec::new(),
            right_types: Vec::new(),
            output: None,
        }
    }

    /// The same join with residual filter `filter`.
    pub fn with_filter(mut self, filter: Option<Expr>) -> Self {
        self.filter = filter;
        self
    }

    /// The same join with the given input column types.
    pub fn with_types(mut self, left: Vec<DataType>, right: Vec<DataType>) -> Self {
        self.left_types = left;
        self.right_types = right;
        self
    }

    /// The same join emitting only the output columns at `output` (see [`JoinSpec::output`]).
    pub fn with_output(mut self, output: Option<Vec<usize>>) -> Self {
        self.output = output;
        self
    }

    /// Whether output position `pos` (of the unprojected output) is emitted.
    pub(crate) fn emits(&self, pos: usize) -> bool {
        self.output
            .as_ref()
            .is_none_or(|o| o.binary_search(&pos).is_ok())
    }

    /// Whether this is a null-aware anti join (`NOT IN`).
    pub(crate) fn null_aware(&self) -> bool {
        matches!(self.join_type, JoinType::Anti { null_aware: true })
    }
}

/// The build input's port (0 for the left input, 1 for the right).
pub(crate) fn port_of(side: JoinSide) -> usize {
    match side {
        JoinSide::Left => 0,
        JoinSide::Right => 1,
    }
}

/// What a join type means for a given build side: which matches are recorded and what is
/// output when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Roles {
    /// Matching pairs are output, as left columns then right columns.
    pub pairs: bool,
    /// Each probe row's "has a match" flag is recorded.
    pub track_probe: bool,
    /// Each build row's "has a match" flag is recorded.
    pub track_build: bool,
    /// After each probe batch its rows without a match are output: padded with NULL build
    /// columns when `pairs` (outer joins), alone otherwise (anti join probing the left side).
    pub probe_unmatched: bool,
    /// A probe row is output alone at its first match (semi join probing the left side).
    pub probe_semi: bool,
    /// After the whole probe input, the build rows whose "has a match" flag equals this are
    /// output (`false`: outer and anti joins; `true`: semi join), padded when `pairs`.
    pub build_final: Option<bool>,
    /// A probe row needs only one match (semi and anti joins probing the left side).
    pub probe_first_only: bool,
    /// A build row needs only one match (semi and anti joins building the left side).
    pub skip_matched_build: bool,
}

impl Roles {
    /// The roles of `join_type` when `build` is held in memory.
    pub fn of(join_type: JoinType, build: JoinSide) -> Roles {
        let probe_is_left = build == JoinSide::Right;
        let (keep_left, keep_right) = match join_type {
            JoinType::Left => (true, false),
            JoinType::Right => (false, true),
            JoinType::Full => (true, true),
            _ => (false, false),
        };
        let (keep_probe, keep_build) = if probe_is_left {
            (keep_left, keep_right)
        } else {
            (keep_right, keep_left)
        };
        match join_type {
            JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => Roles {
                pairs: true,
                track_probe: keep_probe,
                track_build: keep_build,
                probe_unmatched: keep_probe,
                probe_semi: false,
                build_final: keep_build.then_some(false),
                probe_first_only: false,
                skip_matched_build: false,
            },
            JoinType::Semi | JoinType::Anti { .. } => {
                let semi = join_type == JoinType::Semi;
                Roles {
                    pairs: false,
                    track_probe: probe_is_left,
                    track_build: !probe_is_left,
                    probe_unmatched: probe_is_left && !semi,
                    probe_semi: probe_is_left && semi,
                    build_final: (!probe_is_left).then_some(semi),
                    probe_first_only: probe_is_left,
                    skip_matched_build: !probe_is_left,
                }
            }
        }
    }

    /// Whether a probe batch can produce output even when no build row can match it.
    pub fn probe_alone(&self) -> bool {
        self.probe_unmatched
    }

    /// Whether the build rows alone produce output after the probe input (so the join is
    /// not done just because nothing can match).
    pub fn build_alone(&self) -> bool {
        self.build_final == Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_cover_each_type_and_side() {
        let r = Roles::of(JoinType::Inner, JoinSide::Right);
        assert!(r.pairs && !r.track_probe && !r.track_build && r.build_final.is_none());
        let r = Roles::of(JoinType::Left, JoinSide::Right);
        assert!(r.track_probe && r.probe_unmatched && r.build_final.is_none());
        let r = Roles::of(JoinType::Left, JoinSide::Left);
        assert!(!r.track_probe && r.track_build && r.build_final == Some(false));
        let r = Roles::of(JoinType::Full, JoinSide::Left);
        assert!(r.track_probe && r.track_build && r.probe_unmatched && r.build_alone());
        let r = Roles::of(JoinType::Semi, JoinSide::Right);
        assert!(r.probe_semi && r.probe_first_only && !r.pairs && !r.probe_alone());
        let r = Roles::of(JoinType::Semi, JoinSide::Left);
        assert!(r.build_final == Some(true) && !r.build_alone() && r.skip_matched_build);
        let anti = JoinType::Anti { null_aware: false };
        assert!(Roles::of(anti, JoinSide::Right).probe_alone());
        assert!(Roles::of(anti, JoinSide::Left).build_alone());
    }
}

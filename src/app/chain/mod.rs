//! The drawing of a redundant chain's answers: the fans, the exact posterior, the iterative
//! answers and the reachable outline (the rest of a chain's lab is the app's one set of plugins).

pub(crate) mod draw;

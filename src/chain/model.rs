//! A chain's trained nets ([`ChainModel`]): the squared-error, mixture and flow nets of one chain
//! arm, as `elbow train --arm` trains them and every `--model FILE` (and the app) loads them.
//!
//! They are saved and loaded as a model file ([`crate::learned::file`], the one format for every
//! arm: [`ChainModel::save`], [`ChainModel::load`]), which also reads the chain model files of
//! version 1 (`elbow-chain-model`).

use super::nets::{ChainNet, NetConfig, NetKind};
use super::solve::{NetSet, Nets};
use crate::arm::Arm;

/// The trained nets of one chain arm, with the arm and the settings they were trained with.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainModel {
    /// The arm the nets answer for.
    pub arm: Arm,
    /// How the nets were built and trained.
    pub net: NetConfig,
    /// The squared-error net, if trained.
    pub mse: Option<ChainNet>,
    /// The mixture density network, if trained.
    pub mdn: Option<ChainNet>,
    /// The normalizing flow, if trained (files written before the flow have none).
    pub flow: Option<ChainNet>,
}

impl ChainModel {
    /// A model of these nets for `arm`.
    pub fn new(arm: Arm, net: NetConfig, mut nets: NetSet) -> Self {
        let (mse, mdn, flow) = (nets.take(NetKind::Mse), nets.take(NetKind::Mdn), nets.take(NetKind::Flow));
        Self { arm, net, mse, mdn, flow }
    }

    /// The net of `kind`, if the model holds one.
    pub fn net(&self, kind: NetKind) -> Option<&ChainNet> {
        match kind {
            NetKind::Mse => self.mse.as_ref(),
            NetKind::Mdn => self.mdn.as_ref(),
            NetKind::Flow => self.flow.as_ref(),
        }
    }

    /// The place of the net of `kind`.
    pub fn net_mut(&mut self, kind: NetKind) -> &mut Option<ChainNet> {
        match kind {
            NetKind::Mse => &mut self.mse,
            NetKind::Mdn => &mut self.mdn,
            NetKind::Flow => &mut self.flow,
        }
    }

    /// The nets, as the solving code takes them.
    pub fn nets(&self) -> Nets<'_> {
        Nets::of(NetKind::ALL.iter().filter_map(|&k| self.net(k)))
    }

    /// The nets, owned.
    pub fn into_nets(self) -> NetSet {
        let mut set = NetSet::default();
        for (kind, net) in [(NetKind::Mse, self.mse), (NetKind::Mdn, self.mdn), (NetKind::Flow, self.flow)] {
            set.set(kind, net);
        }
        set
    }

    /// What the model is, for messages: `a chain model for rail3`.
    pub fn describe(&self) -> String {
        format!("a chain model for {}", self.arm.name)
    }

    /// Whether these nets may answer for `arm`: only for the arm they were trained on.
    pub fn check_fits(&self, arm: &Arm) -> Result<(), String> {
        if self.arm == *arm {
            return Ok(());
        }
        Err(format!("it is {}, and its nets answer only on that arm, not on {}", self.describe(), arm.name))
    }
}

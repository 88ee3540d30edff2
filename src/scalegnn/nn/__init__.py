"""GNN layers (one family per module) and complete models."""
from scalegnn.nn.gat import GATLayer
from scalegnn.nn.gcn import GCNLayer, gcn_norm
from scalegnn.nn.gin import GINLayer
from scalegnn.nn.jk import JumpingKnowledge
from scalegnn.nn.mixhop import MixHopLayer
from scalegnn.nn.models import (MODELS, GATNet, GCNNet, GINNet, GraphSAINTNet, JKNet, MixHopNet,
                                build_model, parse_arch, weighted_loss)
from scalegnn.nn.pyg import PyGNet, pyg_model
from scalegnn.nn.saint import SAINTLayer

__all__ = ["GATLayer", "GATNet", "GCNLayer", "GCNNet", "GINLayer", "GINNet", "GraphSAINTNet",
           "JKNet", "JumpingKnowledge", "MODELS", "MixHopLayer", "MixHopNet", "PyGNet",
           "SAINTLayer", "build_model", "gcn_norm", "parse_arch", "pyg_model", "weighted_loss"]

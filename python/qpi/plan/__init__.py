"""Stage 4: layout and planning passes. They decide, before lowering, where
tensors live and which ops share work, and record it in graph.plan (a
Planning) for the lowering to follow; Session.stats["passes"] reports them:

  layout.py          1x1 convs whose readers all read plain NCHW write NCHW themselves
  channel_views.py   chains of channel Concat / Slice / Split / shuffle as one NC4HW4 gather
  siblings.py        convs that read one map with one window run as one merged conv
  inplace_concat.py  Concat inputs computed in place in the Concat's output"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import channel_views, inplace_concat, layout, siblings


@dataclass
class Planning:
    plain_out: set = field(default_factory=set)  # conv outputs written in plain NCHW
    siblings: dict = field(default_factory=dict)  # node name -> its merged group's nodes, in graph order
    dest: dict = field(default_factory=dict)  # tensor -> (Concat output, element offset) it is written at
    nhwc: dict = field(default_factory=dict)  # conv name -> the Transpose(0, 2, 3, 1) output it writes
    absorbed: set = field(default_factory=set)  # nodes that cost nothing (their output is written in place)
    inplace_concats: dict = field(default_factory=dict)  # Concat name -> [(input, offset)]
    channel_maps: dict = field(default_factory=dict)  # tensor -> [(source, channel)]: a channel gather
    channel_virtual: set = field(default_factory=set)  # channel-gather tensors never written (readers compose)
    channel_skip: set = field(default_factory=set)  # a channel shuffle's inner Reshape and Transpose


PIPELINE = (layout, channel_views, siblings, inplace_concat)


def run(graph) -> dict[str, int]:
    """Plan the graph (fills graph.plan); returns counts per planning pass."""
    graph.plan = Planning()
    return {f"plan.{p.__name__.rsplit('.', 1)[-1]}": p.run(graph) for p in PIPELINE}

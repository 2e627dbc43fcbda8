"""Channel moves of rank-4 maps as one gather: Concat along channels, Slice /
Split of channels, and the channel shuffle (Reshape [N, C, H, W] -> [N, g,
C/g, H, W] -> Transpose(0, 2, 1, 3, 4) -> Reshape back: ShuffleNet) each
say which input channel every output channel is. Chained, a tensor read only
by such moves is never written (virtual): its readers take their channels
from the maps it was made of. ShuffleNetV2's unit Concat -> shuffle ->
Slice, Slice becomes two gathers straight from the Concat's inputs (one
NC4HW4 pass) instead of a Concat, two reorders, a transpose between two
copies and two slices.

Fills plan.channel_maps (tensor -> [(source tensor, channel)] for each
output computed as a gather), plan.channel_virtual (those never written)
and plan.channel_skip (the shuffle's inner Reshape and Transpose). The
lowering is the ops' registry entries (ops/_slicing.py: lower_channel_move)."""
from __future__ import annotations

from ..ops._slicing import channel_move_maps, shuffle_of


def _shape(g, t):
    return tuple(int(d) for d in g.shapes[t])


def run(graph) -> int:
    g = graph
    plan = g.plan
    units = {}  # head node name -> (input tensors, {output: map over the inputs as [(input, channel)]}, skipped)
    for n in g.nodes:
        sh = shuffle_of(g, n)
        if sh is not None:
            tr, last, groups = sh
            x = n.inputs[0]
            c = _shape(g, x)[1]
            per = c // groups
            units[n.name] = ([x], {last.outputs[0]: [(x, gi * per + k) for k in range(per) for gi in range(groups)]},
                             [n.name, tr.name])
            continue
        maps = channel_move_maps(g, n)
        if maps is not None:
            units[n.name] = ([t for t in n.inputs if t], maps, [])
    if not units:
        return 0
    heads = {name for name in units}
    produced = {}  # tensor -> head node name
    for name, (_, maps, _) in units.items():
        for y in maps:
            produced[y] = name
    virtual = set()
    for y in produced:
        readers = g.consumers(y)
        if (y not in g.outputs and readers and y not in plan.dest
                and all(r.name in heads and y in units[r.name][0] for r in readers)):
            virtual.add(y)
    # compose in graph order: a virtual input's channels are its own map's
    final = {}
    for n in g.nodes:
        if n.name not in units:
            continue
        _, maps, _ = units[n.name]
        for y, m in maps.items():
            final[y] = [pair for t, ch in m for pair in ([final[t][ch]] if t in virtual else [(t, ch)])]
    # keep the units that gain: a shuffle, or one that reads or writes a virtual tensor
    kept = {name for name, (ins, maps, skip) in units.items()
            if skip or any(t in virtual for t in ins) or any(y in virtual for y in maps)}
    for name in kept:
        _, maps, skip = units[name]
        plan.channel_skip.update(skip)
        for y in maps:
            plan.channel_maps[y] = final[y]
            if y in virtual:
                plan.channel_virtual.add(y)
    # a conv whose readers all gather from it writes NC4HW4 (plan/layout.py chose plain for a shuffle's Reshape)
    for t in list(plan.plain_out):
        readers = g.consumers(t)
        if readers and t not in g.outputs and all(r.name in kept for r in readers):
            plan.plain_out.discard(t)
    return len(kept)

// Package memview writes the memory viewer: one self-contained HTML page
// (styles, script and data inline; nothing fetched, no CDN) that shows one
// device timeline, or two side by side.
//
// Views: memory over time stacked by tag with the step phases shaded, the
// reserved bytes as a line and the peak marked; the live blocks at a clicked
// instant (or the peak button) grouped tag → creator as a sortable table
// and a treemap; the live segments with their blocks (reserved vs
// allocated); OOM events with the *OOMError's text; and for two runs, x
// aligned by step phase and a table of the difference per tag at the peaks.
//
// Alignment (align.js). Each run's phase runs (a run begins at an alloc
// whose phase label differs from the current one) are keyed "step S NAME
// #K": each forward run after the first begins the next step (an
// optimizer often allocates nothing once its state exists, so its phase
// cannot mark steps; a checkpointed backward's recompute has its own
// phase), K counts the runs of NAME so far in step S. The two
// key lists are merged in order; a key both runs have spans one unit of x
// in both, so forward, backward and optimizer of step i line up whatever
// else either run does; a key only one run has (an eval phase, or a
// checkpointed run's recompute and second backward) spans a unit that the
// other run shows hatched ("no eval"), its memory held. A forward phase
// inside a step (an eval labelled forward, micro-batches of gradient
// accumulation) counts as a step.
// Keys the runs order differently are shown one run at a time.
//
// Format. The page holds a JSON header per run (name, device, capacity,
// event count, the label table of scope/op/phase strings, the OOM texts,
// the bytes live before the recording started) and the events as one
// base64 byte stream per run, columnar in meaning and delta-encoded: per
// event one byte kind|tag<<3, the time delta as a uvarint, then by kind
// the bytes, the address delta (zigzag varint) and the label index (alloc);
// the distance back to the block's alloc (free, retag: so frees carry no
// size or address; 0 for a block older than the recording, followed by its
// bytes, address delta and label); bytes and address delta (segment
// events). Totals are not stored: the page sums them, as ReadTimeline
// checks they follow.
//
// Reading back. Read decodes a page into its runs' events (a free or
// retag gets its block's address and its alloc's label, as the device
// records them), so the page is also the compact file a run keeps: a run
// report's mem_view and a bench row's view name one, and headroom view
// reads them (device.ReadHTML) to show a run again or compare two.
//
// Level of detail. At open the script decodes the stream into typed
// columns and computes per bucket of 16 events the largest total, the tag
// split at that instant, the smallest total and the reserved bytes, then
// coarser levels of 4× each; a frame reads, per pixel column, the coarsest
// level whose bucket fits the column's events, so a frame costs about
// width × 4 buckets whatever the event count. Zoomed below 16 events per
// pixel the chart stays at 16-event buckets; the table at a clicked
// instant is exact (a replay of the events up to it).
//
// Knobs and defaults: none in the file; the bucket (16) and the level
// factor (4) are constants of viewer.js.
//
// Limits: the x axis is event order (times are shown at the ticks), not
// time; within a phase unit of the compare view x is event order, so two
// runs' events of one phase line up at its start and end, not in between;
// segments reserved before the recording started are not in the timeline
// and so not drawn.
//
// Memory. Writing streams the page through a 64 KiB buffer and holds the
// encoded stream of each run, plus a map of live blocks by address. The
// stream measured 6.9 bytes per event for a planner run of the transformer
// (headroom plan --model transformer --batch 8 --timeline) and 7.7 for
// BenchmarkViewer's synthetic steps (10.2 bytes per event of HTML after
// base64: 102 MB for 10M events). In the browser the
// columns cost 38 bytes per event (kind, tag: 1 each; bytes, address,
// time: 8 each; block reference, label: 4 each) and the levels about
// 10 × 4 / 16 × 4/3 ≈ 3.3 bytes per event.
package memview

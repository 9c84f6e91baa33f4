"use strict";
// Alignment of two runs (compare mode). Each run's phase runs are keyed by
// step and name: each forward run after the first begins the next step
// (the optimizer often allocates nothing once its state exists, and a
// checkpointed backward's recompute has its own phase), and the key is
// "step S NAME #K" for the K-th run of NAME in step S ("before" for the
// events before the first phase). The two key lists are merged in order:
// a key both runs have takes one unit of x in both, so forward, backward
// and optimizer of step i line up whatever else either run does; a key
// only one run has (an eval phase, say) takes a unit where the other run
// holds still (a gap in its chart, its memory constant).
function keyed(r){const ps=r.phases,segs=[];
  if(!ps.length)return[{a:0,b:r.n,key:"all"}];
  if(ps[0].a>0)segs.push({a:0,b:ps[0].a,key:"before"});
  let step=0,forward=false,count=new Map();
  for(const p of ps){if(p.phase==="forward"){if(forward){step++;count=new Map()}forward=true}
    const k=count.get(p.phase)||0;count.set(p.phase,k+1);
    if(p.b>p.a)segs.push({a:p.a,b:p.b,key:"step "+step+" "+p.phase+" #"+k,p})}
  return segs}
// merge gives each segment of A and B its unit u and returns the merged keys.
function merge(A,B){const inA=new Map(A.map((s,i)=>[s.key,i])),inB=new Map(B.map((s,i)=>[s.key,i])),keys=[];let i=0,j=0;
  const take=s=>{s.u=keys.length;keys.push(s.key)};
  while(i<A.length||j<B.length){
    if(i<A.length&&j<B.length&&A[i].key===B[j].key){B[j].u=keys.length;take(A[i]);i++;j++;continue}
    const aAhead=i<A.length&&(inB.get(A[i].key)??-1)>=j,bAhead=j<B.length&&(inA.get(B[j].key)??-1)>=i;
    if(i<A.length&&!aAhead)take(A[i++]);      // A's key is not to come in B
    else if(j<B.length&&!bAhead)take(B[j++]); // B's key is not to come in A
    else take(A[i++])}                         // the runs order them differently: A's alone
  return keys}
// alignedMap maps x (units) to event indexes and back over a run's segments.
function alignedMap(segs,len){const last=(f,v)=>{let lo=0,hi=segs.length-1;while(lo<hi){const m=(lo+hi+1)>>1;if(f(segs[m])<=v)lo=m;else hi=m-1}return segs[lo]};
  const have=new Set(segs.map(s=>s.u));
  for(const s of segs)if(s.p)s.p.x1=s.u+1;
  return{len,segs,missing:[...Array(len).keys()].filter(u=>!have.has(u)),
    toI:x=>{if(x<segs[0].u)return segs[0].a;const s=last(s=>s.u,x);return x<s.u+1?s.a+(x-s.u)*(s.b-s.a):s.b-1e-9},
    toX:i=>{const s=last(s=>s.a,i);return s.u+Math.min(1,Math.max(0,(i-s.a)/(s.b-s.a)))}}}
// align sets both runs' maps to the merged phase axis.
function align(A,B){const sa=keyed(A),sb=keyed(B),keys=merge(sa,sb);V.keys=keys;
  A.map=alignedMap(sa,keys.length);B.map=alignedMap(sb,keys.length)}
// gaps marks the units a run lacks (phases only the other run has).
function gaps(g,r,X,pl,W,ph){const m=r.map;if(!m.missing)return;g.font="11px system-ui,sans-serif";
  for(const u of m.missing){const a=Math.max(pl,X(u)),b=Math.min(W,X(u+1));if(b<=pl||a>=W)continue;
    g.fillStyle="rgba(0,0,0,0.10)";for(let x=a+3;x<b;x+=6)g.fillRect(x,0,1,ph);
    const s="no "+V.keys[u].replace(/^step \d+ /,"").replace(/ #\d+$/,"");const tw=g.measureText(s).width;if(b-a>tw+8){g.fillStyle="rgba(255,255,255,0.85)";g.fillRect(a+2,18,tw+4,14);g.fillStyle="#444";g.fillText(s,a+4,29)}}}

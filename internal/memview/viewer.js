const TAGS=["parameter","gradient","optimizer","activation","workspace","communication","other"];
const COL=["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#7f7f7f"];
const RGBA=COL.map(c=>{const v=parseInt(c.slice(1),16);return (255<<24|((v&255)<<16)|(v&0xff00)|(v>>16))>>>0});
const PH={forward:"rgba(31,119,180,0.10)",backward:"rgba(255,127,14,0.12)",recompute:"rgba(148,103,189,0.14)",optimizer:"rgba(44,160,44,0.14)"};
const OTHERPH="rgba(0,0,0,0.05)";
const B0=16,LF=4,NT=7;
const $=s=>document.querySelector(s);
function h(tag,attrs,txt){const e=document.createElement(tag);Object.assign(e,attrs||{});if(txt!==undefined)e.textContent=txt;return e}
function fmt(b){const a=Math.abs(b);if(a>=1<<30)return(b/(1<<30)).toFixed(2)+" GiB";if(a>=1<<20)return(b/(1<<20)).toFixed(2)+" MiB";if(a>=1024)return(b/1024).toFixed(1)+" KiB";return b+" B"}
async function bytesOf(id){const s=document.getElementById(id).textContent;
  if(Uint8Array.fromBase64)return Uint8Array.fromBase64(s);
  const bin=atob(s),u=new Uint8Array(bin.length);for(let i=0;i<bin.length;i++)u[i]=bin.charCodeAt(i);return u}
// decode reads the event stream (see encode.go) into columns.
function decode(r,d){const n=r.n;let p=0;
  const uv=()=>{let b=d[p++];if(b<128)return b;let v=b&127,m=128;do{b=d[p++];v+=(b&127)*m;m*=128}while(b&128);return v};
  const sv=()=>{const u=uv();return u%2?-(u+1)/2:u/2};
  const kind=new Uint8Array(n),tag=new Uint8Array(n),bytes=new Float64Array(n),ref=new Int32Array(n),lab=new Int32Array(n),addr=new Float64Array(n),t=new Float64Array(n);
  let tt=0,aa=0;
  for(let i=0;i<n;i++){const b=d[p++],k=b&7;kind[i]=k;tag[i]=b>>3&7;tt+=uv();t[i]=tt;ref[i]=-1;lab[i]=-1;
    if(k===0){bytes[i]=uv();aa+=sv();addr[i]=aa;lab[i]=uv()}
    else if(k===1||k===2){const back=uv();if(back>0){ref[i]=i-back;bytes[i]=bytes[i-back];if(b&64)lab[i]=uv()}else{bytes[i]=uv();aa+=sv();addr[i]=aa;lab[i]=uv()}}
    else if(k===5){bytes[i]=uv();lab[i]=uv()}
    else{bytes[i]=uv();aa+=sv();addr[i]=aa}}
  Object.assign(r,{kind,tag,bytes,ref,lab,addr,t})}
// summarize computes totals, the peak, phase runs and the level-of-detail tables.
function summarize(r){const n=r.n,cur=r.baseByTag.slice(),btag=new Uint8Array(n);
  let alloc=r.baseAllocated,res=r.baseReserved,peak=-1,peakI=-1;
  const levels=[];const nb=Math.ceil(n/B0);
  const L0={s:B0,max:new Float32Array(nb),min:new Float32Array(nb),res:new Float32Array(nb),tags:new Float32Array(nb*NT)};
  const phases=[];let ph="";
  for(let i=0;i<n;i++){const k=r.kind[i],b=r.bytes[i];
    if(k===0){btag[i]=r.tag[i];cur[r.tag[i]]+=b;alloc+=b;const f=r.labels[r.lab[i]][2];
      if(f&&f!==ph){ph=f;phases.push({phase:f,a:i})}}
    else if(k===1){const o=r.ref[i]>=0?btag[r.ref[i]]:r.tag[i];cur[o]-=b;alloc-=b}
    else if(k===2){const o=r.ref[i]>=0?btag[r.ref[i]]:6;cur[o]-=b;cur[r.tag[i]]+=b;if(r.ref[i]>=0)btag[r.ref[i]]=r.tag[i]}
    else if(k===3||k===6)res+=b;else if(k===4||k===7)res-=b;
    if(k===0&&alloc>=peak){peak=alloc;peakI=i}
    const j=(i/B0)|0;
    if(i%B0===0||alloc>L0.max[j]){L0.max[j]=alloc;for(let q=0;q<NT;q++)L0.tags[j*NT+q]=cur[q]}
    if(i%B0===0||alloc<L0.min[j])L0.min[j]=alloc;
    if(res>L0.res[j])L0.res[j]=res}
  if(peakI<0){peakI=n-1;peak=alloc}
  levels.push(L0);
  for(let s=B0*LF;s<n*LF;s*=LF){const P=levels[levels.length-1],m=Math.ceil(n/s),L={s,max:new Float32Array(m),min:new Float32Array(m),res:new Float32Array(m),tags:new Float32Array(m*NT)};
    for(let j=0;j<m;j++){let best=-1;L.min[j]=Infinity;for(let c=j*LF;c<Math.min(P.max.length,j*LF+LF);c++){if(P.max[c]>L.max[j]||best<0){L.max[j]=P.max[c];best=c}L.min[j]=Math.min(L.min[j],P.min[c]);L.res[j]=Math.max(L.res[j],P.res[c])}
      for(let q=0;q<NT;q++)L.tags[j*NT+q]=P.tags[best*NT+q]}
    levels.push(L);if(m<=1)break}
  for(let k=0;k<phases.length;k++)phases[k].b=k+1<phases.length?phases[k+1].a:n;
  Object.assign(r,{levels,peak,peakI,phases,maxRes:Math.max(...levels[levels.length-1].res)})}
// mapper is a run's own x axis: the event index (compare mode replaces it: align).
function mapper(r){for(const p of r.phases)p.x1=p.b;return{len:r.n,toI:x=>x,toX:i=>i}}
// column returns, for events [a,b), the bucket with the largest total.
function column(r,a,b){a=Math.max(0,Math.floor(a));b=Math.min(r.n,Math.ceil(b));if(b<=a)b=a+1;
  let L=r.levels[0];for(const l of r.levels){if(l.s<=b-a)L=l;else break}
  let j0=Math.floor(a/L.s),j1=Math.min(L.max.length,Math.ceil(b/L.s)),best=j0,mn=Infinity,rs=0;
  for(let j=j0;j<j1;j++){if(L.max[j]>L.max[best])best=j;mn=Math.min(mn,L.min[j]);rs=Math.max(rs,L.res[j])}
  return{L,j:best,min:mn,res:rs}}
const V={x0:0,x1:1,sel:[],runs:[],aligned:false};
// LEN is the x extent: the run's own, or in compare mode the longer run's so both share one axis.
const LEN=m=>V.aligned?Math.max(...V.runs.map(r=>r.map.len)):m.len;
function draw(ri){const r=V.runs[ri],c=r.canvas,dpr=window.devicePixelRatio||1,W=c.clientWidth,H=c.clientHeight;
  if(c.width!==W*dpr){c.width=W*dpr;c.height=H*dpr}const g=c.getContext("2d");g.setTransform(dpr,0,0,dpr,0,0);g.clearRect(0,0,W,H);
  const top=Math.max(...V.runs.map(q=>Math.max(q.maxRes,q.peak)))*1.05||1,pl=70,pw=W-pl-8,ph=H-28,m=r.map,span=V.x1-V.x0;
  const X=x=>pl+(x/LEN(m)-V.x0)/span*pw,Y=v=>ph-v/top*(ph-8);
  shade(g,r,X,pl,W,ph)
  bars(g,r,m,span,pl,pw,ph,top,dpr,Y)
  g.strokeStyle="#c00";g.setLineDash([4,3]);const xp=X(m.toX(r.peakI));g.beginPath();g.moveTo(xp,0);g.lineTo(xp,ph);g.stroke();g.setLineDash([]);
  {const s="peak "+fmt(r.peak),tw=g.measureText(s).width,lx=Math.min(xp+4,W-tw-6),ly=Math.max(24,Y(r.peak)-6);g.fillStyle="rgba(255,255,255,0.85)";g.fillRect(lx-2,ly-11,tw+4,14);g.fillStyle="#c00";g.fillText(s,lx,ly)}
  if(V.sel[ri]!==undefined){const xs=X(m.toX(V.sel[ri]));g.strokeStyle="#000";g.beginPath();g.moveTo(xs,0);g.lineTo(xs,ph);g.stroke()}
  g.fillStyle="#222";g.font="11px system-ui,sans-serif";for(let k=0;k<=4;k++){const v=top*k/4;g.fillText(fmt(v),2,Y(v)+4);g.fillStyle="#eee";g.fillRect(pl,Y(v),pw,1);g.fillStyle="#222"}
  for(let k=0;k<=5;k++){const x=(V.x0+k/5*span)*LEN(m),i0=m.toI(x);if(i0>r.n)continue;const i=Math.min(r.n-1,Math.max(0,Math.round(i0)));const lbl="#"+i+" "+(r.t[i]/1e6).toFixed(1)+"ms";g.fillText(lbl,Math.min(Math.max(pl,pl+k/5*pw-30),W-g.measureText(lbl).width-2),H-8)}
  if(r.ooms.length){g.fillStyle="#c00";for(const o of r.ooms){const x=X(m.toX(o.i));g.fillRect(x-1,0,3,10)}}}
// shade shades the visible phase runs, at most one per pixel column (the
// first that starts in it), so a frame costs the width, not the step count.
function shade(g,r,X,pl,W,ph){const ps=r.phases,m=r.map,i0=m.toI(V.x0*LEN(m));let lo=0,hi=ps.length;
  while(lo<hi){const k=(lo+hi)>>1;if(ps[k].b<=i0)lo=k+1;else hi=k}
  let last=-1;for(let k=lo;k<ps.length;k++){const p=ps[k],a=X(m.toX(p.a));if(a>W)break;const b=X(p.x1),x=Math.max(a,pl);if(Math.floor(x)===last&&b-a<1)continue;last=Math.floor(x);
    g.fillStyle=PH[p.phase]||OTHERPH;g.fillRect(x,0,Math.max(1,Math.min(b,W)-x),ph)}
  gaps(g,r,X,pl,W,ph)}
// bars paints the stacked tag columns straight into pixels (one column per
// device pixel), then the reserved line and the minimum as one path each.
function bars(g,r,m,span,pl,pw,ph,top,dpr,Y){const PW=Math.floor(pw*dpr),PH=Math.floor(ph*dpr);if(PW<=0||PH<=0)return;
  const img=g.getImageData(Math.round(pl*dpr),0,PW,PH),px32=new Uint32Array(img.data.buffer);
  const res=[],mins=[];
  for(let px=0;px<PW;px++){const ia=m.toI((V.x0+px/PW*span)*LEN(m)),ib=m.toI((V.x0+(px+1)/PW*span)*LEN(m));if(ia>=r.n)break;
    const q=column(r,ia,ib);let y=PH;
    for(let t=0;t<NT;t++){const v=q.L.tags[q.j*NT+t];if(v<=0)continue;const y1=Math.max(0,Math.round(y-v/top*(PH-8*dpr)));for(let k=y1;k<y;k++)px32[k*PW+px]=RGBA[t];y=y1}
    res.push(Y(q.res));mins.push(Y(q.min))}
  g.putImageData(img,Math.round(pl*dpr),0);g.setTransform(dpr,0,0,dpr,0,0);
  g.strokeStyle="#000";g.lineWidth=1;g.beginPath();for(let k=0;k<res.length;k++){const x=pl+k/dpr;if(k)g.lineTo(x,res[k]);else g.moveTo(x,res[k])}g.stroke();
  g.fillStyle="rgba(0,0,0,0.45)";for(let k=0;k<mins.length;k+=dpr)g.fillRect(pl+k/dpr,mins[k],1,1)}
function drawAll(){for(let i=0;i<V.runs.length;i++)draw(i)}
// live groups the blocks live after event i by tag and creator, and lists live segments.
function live(r,i){const n=r.n,on=new Uint8Array(n),bt=new Uint8Array(n),seg=new Map(),g=new Map();
  for(let e=0;e<=i&&e<n;e++){const k=r.kind[e];if(k===0){on[e]=1;bt[e]=r.tag[e]}else if(k===1){if(r.ref[e]>=0)on[r.ref[e]]=0}else if(k===2){if(r.ref[e]>=0)bt[r.ref[e]]=r.tag[e]}
    else if(k===3)seg.set(r.addr[e],(seg.get(r.addr[e])||0)+r.bytes[e]);else if(k===4)seg.delete(r.addr[e])}
  const byTag=r.baseByTag.slice(),blocks=[];
  for(let t=0;t<NT;t++)if(r.baseByTag[t]>0)g.set(t+"\u0000(before recording)",{tag:t,creator:"(before recording)",bytes:r.baseByTag[t],count:0});
  for(let e=0;e<=i&&e<n;e++){if(!on[e])continue;const l=r.labels[r.lab[e]],cr=l[0]&&l[1]?l[0]+"/"+l[1]:(l[0]||l[1]||"?"),t=bt[e],key=t+"\u0000"+cr;
    let o=g.get(key);if(!o){o={tag:t,creator:cr,bytes:0,count:0};g.set(key,o)}o.bytes+=r.bytes[e];o.count++;byTag[t]+=r.bytes[e];blocks.push(e)}
  return{groups:[...g.values()],byTag,blocks,bt,seg}}
function tagTable(r,ri,L){const tb=h("table",{id:"tags"+ri});tb.append(h("tr",{},"")) ;tb.rows[0].append(h("th",{className:"l"},"tag"),h("th",{},"bytes"),h("th",{},"human"));
  let tot=0;for(let t=0;t<NT;t++){tot+=L.byTag[t];const tr=h("tr");tr.dataset.tag=TAGS[t];tr.dataset.bytes=L.byTag[t];tr.append(h("td",{className:"l"},TAGS[t]),h("td",{},String(L.byTag[t])),h("td",{},fmt(L.byTag[t])));tb.append(tr)}
  const tr=h("tr");tr.dataset.tag="total";tr.dataset.bytes=tot;tr.append(h("th",{className:"l"},"total"),h("th",{},String(tot)),h("th",{},fmt(tot)));tb.append(tr);return tb}
function groupTable(L,ri){const tb=h("table",{id:"groups"+ri}),cols=[["tag","l"],["creator","l"],["bytes",""],["count",""]];let key="bytes",dir=-1;
  const fill=()=>{while(tb.rows.length>1)tb.deleteRow(1);const gs=L.groups.slice().sort((a,b)=>{const x=key==="tag"?TAGS[a.tag]:a[key],y=key==="tag"?TAGS[b.tag]:b[key];return(x<y?-1:x>y?1:0)*dir});
    for(const o of gs.slice(0,200)){const tr=h("tr");tr.append(h("td",{className:"l"},TAGS[o.tag]),h("td",{className:"l"},o.creator),h("td",{},fmt(o.bytes)),h("td",{},String(o.count)));tr.cells[0].style.color=COL[o.tag];tb.append(tr)}};
  const hr=h("tr");for(const[c,cl]of cols){const th=h("th",{className:cl},c);th.onclick=()=>{dir=key===c?-dir:-1;key=c;fill()};hr.append(th)}tb.append(hr);fill();return tb}
// treemap: slice by tag, then dice each tag's area among its creators.
function treemap(L){const d=h("div",{className:"tree"});const W=460,H=240,tot=L.groups.reduce((s,o)=>s+o.bytes,0)||1;let x=0;
  for(let t=0;t<NT;t++){const gs=L.groups.filter(o=>o.tag===t).sort((a,b)=>b.bytes-a.bytes),sum=gs.reduce((s,o)=>s+o.bytes,0);if(!sum)continue;const w=sum/tot*100;let y=0;
    for(const o of gs){const hh=o.bytes/sum*H;const b=h("div",{title:TAGS[t]+" "+o.creator+" "+fmt(o.bytes)},hh>12&&w>4?o.creator:"");Object.assign(b.style,{left:x+"%",width:w+"%",top:y+"px",height:hh+"px",background:COL[t]});d.append(b);y+=hh}x+=w}
  return d}
function segView(r,L){const d=h("div");const segs=[...L.seg.entries()].sort((a,b)=>a[0]-b[0]).slice(0,40);if(!segs.length){d.append(h("p",{},"no segments recorded"));return d}
  const big=Math.max(...segs.map(s=>s[1]));let used=0,resv=0;
  const sorted=L.blocks.map(e=>[r.addr[e],r.bytes[e],L.bt[e]]).sort((a,b)=>a[0]-b[0]);
  for(const[a,sz]of segs){resv+=sz;const bar=h("div",{className:"seg",title:"segment @"+a+" "+fmt(sz)});bar.style.width=(sz/big*100)+"%";
    for(const[ba,bb,bt]of sorted){if(ba<a||ba>=a+sz)continue;used+=bb;const s=h("i");Object.assign(s.style,{left:((ba-a)/sz*100)+"%",width:Math.max(0.2,bb/sz*100)+"%",background:COL[bt]});bar.append(s)}d.append(bar)}
  d.prepend(h("p",{},segs.length+" segments shown, reserved "+fmt(resv)+", allocated in them "+fmt(used)+" (grey: reserved, not allocated)"));return d}
function select(ri,i){const r=V.runs[ri];i=Math.max(0,Math.min(r.n-1,Math.round(i)));V.sel[ri]=i;const L=live(r,i);r.last=L;
  const p=$("#inst"+ri);p.innerHTML="";p.append(h("h2",{},r.name+": after event #"+i+" ("+(r.t[i]/1e6).toFixed(3)+" ms)"+(i===r.peakI?" — the peak":"")));
  const cols=h("div",{className:"cols"}),a=h("div"),b=h("div");a.append(tagTable(r,ri,L),groupTable(L,ri));b.append(h("h2",{},"treemap: tag → creator"),treemap(L),h("h2",{},"segments (reserved vs allocated)"),segView(r,L));cols.append(a,b);p.append(cols);
  drawAll();if(V.runs.length===2)diff()}
function diff(){const d=$("#diff");d.innerHTML="";const A=V.runs[0],B=V.runs[1],la=live(A,A.peakI),lb=live(B,B.peakI);
  const tb=h("table",{id:"difftable"});const hr=h("tr");hr.append(h("th",{className:"l"},"tag at peak"),h("th",{},A.name),h("th",{},B.name),h("th",{},"difference"));tb.append(hr);
  let sa=0,sb=0;for(let t=0;t<NT;t++){sa+=la.byTag[t];sb+=lb.byTag[t];const tr=h("tr");tr.dataset.tag=TAGS[t];tr.dataset.a=la.byTag[t];tr.dataset.b=lb.byTag[t];tr.append(h("td",{className:"l"},TAGS[t]),h("td",{},fmt(la.byTag[t])),h("td",{},fmt(lb.byTag[t])),h("td",{},fmt(lb.byTag[t]-la.byTag[t])));tb.append(tr)}
  const tr=h("tr");tr.append(h("th",{className:"l"},"total"),h("th",{},fmt(sa)),h("th",{},fmt(sb)),h("th",{},fmt(sb-sa)));tb.append(tr);d.append(h("h2",{},"difference at the peak ("+B.name+" − "+A.name+")"),tb)}
function zoom(f,cx){const s=V.x1-V.x0,ns=Math.min(1,Math.max(1e-7,s*f)),c=V.x0+cx*s;V.x0=Math.max(0,Math.min(1-ns,c-cx*ns));V.x1=V.x0+ns;drawAll()}
function pan(dx){const s=V.x1-V.x0;V.x0=Math.max(0,Math.min(1-s,V.x0+dx*s));V.x1=V.x0+s;drawAll()}
function wire(ri){const c=V.runs[ri].canvas;let drag=null,moved=false;
  const fx=e=>{const R=c.getBoundingClientRect();return Math.max(0,Math.min(1,(e.clientX-R.left-70)/(R.width-78)))};
  c.addEventListener("wheel",e=>{e.preventDefault();zoom(e.deltaY>0?1.25:0.8,fx(e))},{passive:false});
  c.addEventListener("mousedown",e=>{drag=fx(e);moved=false});
  window.addEventListener("mousemove",e=>{if(drag===null)return;const x=fx(e);if(Math.abs(x-drag)>0.002){moved=true;pan(drag-x);drag=x}});
  window.addEventListener("mouseup",e=>{if(drag!==null&&!moved&&e.target===c){const r=V.runs[ri];select(ri,r.map.toI((V.x0+fx(e)*(V.x1-V.x0))*LEN(r.map)))}drag=null})}
async function main(){const t0=performance.now();const runs=JSON.parse($("#runs").textContent);V.aligned=runs.length===2;
  const app=h("div");document.body.prepend(app);app.append(h("h1",{},"headroom memory — "+runs.map(r=>r.name+" ("+r.device+", "+r.n+" events)").join(" vs ")));
  const leg=h("div",{className:"legend"});for(let t=0;t<NT;t++){const s=h("span");const i=h("i");i.style.background=COL[t];s.append(i,TAGS[t]);leg.append(s)}
  for(const p of [...Object.keys(PH),"other phase"]){const s=h("span");const i=h("i");i.style.background=PH[p]||OTHERPH;i.style.border="1px solid #aaa";s.append(i,p);leg.append(s)}
  const s=h("span");s.textContent="— reserved   ┆ peak   · min";leg.append(s);app.append(leg);
  const bar=h("div",{className:"bar"});const pk=h("button",{id:"peak"},"peak");pk.onclick=()=>V.runs.forEach((r,i)=>select(i,r.peakI));
  const zi=h("button",{},"zoom in"),zo=h("button",{},"zoom out"),all=h("button",{},"all");zi.onclick=()=>zoom(0.5,0.5);zo.onclick=()=>zoom(2,0.5);all.onclick=()=>{V.x0=0;V.x1=1;drawAll()};
  bar.append(pk,zi,zo,all,h("span",{},"wheel: zoom, drag: pan, click: the live blocks at that instant"+(V.aligned?"; x aligned by step phase":"")));app.append(bar);
  const ms={};const lap=(k,t)=>{ms[k]=(ms[k]||0)+performance.now()-t};
  for(let i=0;i<runs.length;i++){const r=runs[i];let t=performance.now();const d=await bytesOf("data"+i);lap("bytes",t);t=performance.now();decode(r,d);lap("decode",t);t=performance.now();summarize(r);lap("summarize",t);r.map=mapper(r);
    app.append(h("h2",{},r.name+" — peak "+fmt(r.peak)+" at event #"+r.peakI+", capacity "+(r.capacity&&r.capacity<2**60?fmt(r.capacity):"unlimited")));
    r.canvas=h("canvas",{className:"chart",id:"chart"+i});app.append(r.canvas);V.runs.push(r);
    if(r.ooms.length){app.append(h("h2",{},r.ooms.length+" out-of-memory event(s)"));for(const o of r.ooms)app.append(h("pre",{className:"oom"},"event #"+o.i+": "+(o.text||"(no explanation recorded)")))}}
  if(V.aligned)align(V.runs[0],V.runs[1]);
  app.append(h("div",{id:"diff"}));for(let i=0;i<runs.length;i++){app.append(h("div",{id:"inst"+i}));wire(i)}
  let t=performance.now();drawAll();lap("draw",t);if(V.runs.length===2)diff();
  window.memview={ready:true,openMs:performance.now()-t0,readyAt:performance.now(),ms,runs:V.runs.map(r=>({n:r.n,peak:r.peak,peakI:r.peakI,segs:(r.map.segs||[]).map(s=>({key:s.key,u:s.u,a:s.a,b:s.b})),missing:r.map.missing||[]})),keys:V.keys||[],
    frameMs:frames=>{const t=performance.now();for(let k=0;k<frames;k++){if(k%2)zoom(0.95,0.3);else pan(0.01)}return(performance.now()-t)/frames},
    animate:frames=>new Promise(done=>{let k=0,t=0;const step=now=>{if(k===1)t=now;if(k>frames){done(frames/((now-t)/1000));return}if(k%2)zoom(k<frames/2?0.9:1.1,0.3);else pan(0.01);k++;requestAnimationFrame(step)};requestAnimationFrame(step)})}}
main();

#!/usr/bin/env python3
"""Import cycles between the files of a crate's src/ (`crate::` and `super::` paths outside
`#[cfg(test)]`): prints each cycle and exits 1, or prints "no import cycle"."""
import os,re,sys
root=sys.argv[1]
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)[:-3]
            parts=rel.split('/')
            if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
            files['::'.join(parts)]=p
def resolve(path, cur):
    segs=path.split('::')
    for i in range(len(segs),0,-1):
        k='::'.join(segs[:i])
        if k in files: return k
    return None
g={m:set() for m in files}
for m,p in files.items():
    s=open(p).read()
    s=s.split('#[cfg(test)]')[0]
    for ref in re.findall(r'crate::([a-z_]+(?:::[a-z_]+)*)', s):
        t=resolve(ref,m)
        if t is not None and t!=m and not m.startswith(t+'::') and not t.startswith(m+'::') and t!='': g[m].add(t)
    # super:: refs
    for ref in re.findall(r'super::([a-z_]+)', s):
        base=m.split('::')[:-1]
        t=resolve('::'.join(base+[ref]),m)
        if t and t!=m and not m.startswith(t+'::') and not t.startswith(m+'::'): g[m].add(t)
# collapse to nodes; find SCCs
idx={};low={};st=[];on=set();res=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in g[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: res.append(comp)
for v in g:
    if v not in idx: sc(v)
for comp in res:
    print("cycle:", sorted(comp))
    for a in sorted(comp):
        print("  ",a,"->",sorted(x for x in g[a] if x in comp))
if not res: print("no import cycle")
sys.exit(1 if res else 0)

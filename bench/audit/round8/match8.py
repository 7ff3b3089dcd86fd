import re,json,glob,sys
key=json.load(open('key.json'))
verd={}
for f in glob.glob('verdict_*.md'):
    for line in open(f):
        c=[x.strip() for x in line.strip().strip('|').split('|')]
        if len(c)>=3 and c[0] in key: verd[c[0]]=c[2].strip('*').upper()
labels=[]
for f in ['recall_p1.md','recall_p2.md']:
    repo=None
    for line in open(f):
        m=re.match(r'## \d+\. (\S+)',line)
        if m: repo=m.group(1)
        c=[x.strip() for x in line.strip().strip('|').split('|')]
        if len(c)>=4 and re.match(r'^[A-Z]{0,2}\d+$',c[0]) and repo:
            for fm in re.finditer(r'([\w/.\-]+\.py):(\d+)(?:-(\d+))?',c[1]):
                labels.append((repo,fm.group(1),int(fm.group(2)),int(fm.group(3) or fm.group(2)),c[0],c[3]))
repos=sorted(set(l[0] for l in labels))
run=sys.argv[1] if len(sys.argv)>1 else 'run'
shown=[]
for f in glob.glob(run+'/*.jsonl'):
    for line in open(f):
        d=json.loads(line)
        if d.get('type')=='finding' and d['confidence']>=0.5 and not d.get('context') and d['rule']!='FUS003':
            shown.append(d)
def hit(repo,rel,line,l):
    return l[0]==repo and (rel.endswith(l[1]) or l[1].endswith(rel)) and l[2]-2<=line<=l[3]+2
found=set()
for d in shown:
    repo=d['path'].split('/')[0]
    if repo not in repos: continue
    rel=d['path'][len(repo)+1:]
    lines=[d['line']]+[e['line'] for e in d.get('evidence',[]) if e.get('related') and e.get('line')]
    h=[l for l in labels for ln in lines if hit(repo,rel,ln,l)]
    for l in h: found.add((l[0],l[4]))
    fid=[k for k,v in key.items() if v['fingerprint']==d['fingerprint']]
    print(fid[0] if fid else '(new)', d['rule'], d['path'], d['line'], verd.get(fid[0]) if fid else '', ('LABEL '+h[0][4]+' '+h[0][5]) if h else '-')
print('labels',len(set((l[0],l[4]) for l in labels)),'found',len(found))
for r in repos:
    tot=set(l[4] for l in labels if l[0]==r); f=set(x[1] for x in found if x[0]==r)
    print(r,len(f),'of',len(tot))

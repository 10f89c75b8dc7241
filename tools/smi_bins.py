import sys, collections, datetime
bins = collections.defaultdict(list)
t0 = float(sys.argv[2])
for l in open(sys.argv[1]):
    r = [x.strip() for x in l.split(",")]
    try:
        ts = datetime.datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except Exception:
        continue
    b = (ts - t0) // 0.25 * 0.25
    bins[b].append(r[1:])
out = []
for b, rs in sorted(bins.items()):
    sm = sorted(float(x[0].split()[0]) for x in rs); mem = sorted(float(x[1].split()[0]) for x in rs)
    w = sorted(float(x[2].split()[0]) for x in rs)
    out.append(f"{b:.2f}s:{sm[len(sm)//2]:.0f}/{mem[len(mem)//2]:.0f}/{w[len(w)//2]:.0f}W/{collections.Counter(x[3] for x in rs).most_common(1)[0][0][-4:]}")
print("smi sm/mem/W/reasons: " + " ".join(out))

"""Clients that never read (issue 24, item 5; ADR 0045): 310 clients with one `leitura` key, from
127.0.0.2, pipeline catalog reads and never read an answer, against a backend at MAX_CONNECTIONS=300;
meanwhile an honest key on 127.0.0.1 reads the catalog 20 times, each on a new connection, and its
latencies are printed (median, max) with what the backend refused and closed.

    BIN=target/release/mcp-cursos-backend python3 bench/never_read.py
    UNBOUNDED=1 BIN=... python3 bench/never_read.py   # the same with the bounds lifted

A measurement, not a test: it waits 3 s for the abusers to fill their windows."""
import socket, subprocess, time, json, os, sys, threading, statistics, tempfile
BIN = os.environ.get("BIN", "target/release/mcp-cursos-backend")
d = tempfile.mkdtemp(prefix="never-read-")
with socket.socket() as free:
    free.bind(("127.0.0.1", 0))
    PORT = free.getsockname()[1]
keys = d + "/keys"
def key(name, scope):
    return subprocess.run([BIN, "keys", "create", "--name", name, "--scope", scope], env=dict(PATH=os.environ["PATH"], KEYS_FILE=keys),
                          capture_output=True, text=True, check=True).stdout.strip().split()[-1]
ab, ho = key("abusador", "leitura"), key("honesto", "escrita")
env = dict(PATH=os.environ["PATH"], HOST="127.0.0.1", PORT=str(PORT), DATABASE_PATH=d + "/c.db", KEYS_FILE=keys,
           MAX_CONNECTIONS="300", SESSION_MODE="stateless", RUST_LOG="warn")
if os.environ.get("UNBOUNDED"):  # the bounds of ADR 0045 lifted: what the backend did before them
    env.update(MAX_CONNECTIONS_PER_ADDRESS="300", MAX_CONNECTIONS_PER_KEY="300", WRITE_STALL_TIMEOUT="3600")
p = subprocess.Popen([BIN], env=env, stderr=open(d + "/log", "w"), stdout=subprocess.DEVNULL)
for _ in range(400):
    try: socket.create_connection(("127.0.0.1", PORT)).close(); break
    except OSError: time.sleep(0.05)
def req(k, body):
    b = json.dumps(body)
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAuthorization: Bearer {k}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(b)}\r\n\r\n{b}").encode()
def recv_one(s):
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536)
        if not c: return data
        data += c
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n: rest += s.recv(65536)
    return head.split(b"\r\n")[0]
# 40 long titles so a listing is ~9 KB
s = socket.create_connection(("127.0.0.1", PORT))
for i in range(40):
    s.sendall(req(ho, {"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":f"Curso {i:02} "+"x"*150,"cargaHoraria":4}}}))
    recv_one(s)
s.close()
listing = req(ab, {"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}})
abusers, refused = [], [0]
def abuse():
    c = socket.socket(); c.bind(("127.0.0.2", 0))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        c.connect(("127.0.0.1", PORT)); abusers.append(c)
        c.settimeout(None)
        for _ in range(5000): c.sendall(listing)
    except OSError: refused[0] += 1
threads = [threading.Thread(target=abuse, daemon=True) for _ in range(310)]
for t in threads: t.start()
time.sleep(3)   # let the abusers fill their windows (measurement script, not a test)
lat = []
for i in range(20):
    t0 = time.time()
    h = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    h.sendall(req(ho, {"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}))
    try:
        status = recv_one(h)
    except socket.timeout:
        status = b"no answer within 20 s"
    h.close()
    lat.append(time.time() - t0)
    if b"200" not in status:
        print("honest read", i, status); break
print(f"honest keyed reads during the flood: median {statistics.median(lat)*1000:.1f} ms, max {max(lat)*1000:.1f} ms; abusers connected {len(abusers)}, errored {refused[0]}")
log = open(d + "/log").read()
print("refused at accept:", log.count("its address already holds"), " stall-closed:", log.count("did not take its response"))
p.terminate(); p.wait()

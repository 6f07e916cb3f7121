"""Client test fixture: a minimal 2026-07-28 stdio server (standard library only) that shows what
a client sends when it abandons a request.

* `tools/call` `slow`: never answered.
* `notifications/cancelled`: the cancelled request id is remembered.
* `tools/call` `cancelled`: answers the remembered ids as text (JSON list), in arrival order.
* `tools/call` anything else: answers its name as text.
* `server/discover`: a minimal DiscoverResult for 2026-07-28.

It ignores end of input on request (`--ignore-eof`) and SIGTERM (`--ignore-term`), to test a
client's shutdown escalation.
"""

import json
import signal
import sys
import time


def main() -> None:
    ignore_eof = "--ignore-eof" in sys.argv
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    cancelled = []

    def send(obj) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def text(msg_id, value: str) -> None:
        send({"jsonrpc": "2.0", "id": msg_id,
              "result": {"resultType": "complete", "content": [{"type": "text", "text": value}]}})

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method = msg.get("method")
        if method == "notifications/cancelled":
            cancelled.append(msg["params"]["requestId"])
        elif method == "server/discover":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            if name == "slow":
                continue
            if name == "cancelled":
                text(msg["id"], json.dumps(cancelled))
            else:
                text(msg["id"], name)
    if ignore_eof:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()

"""The source article's service: GET /test/<id> sets the key in Redis, reads
it back and returns it.

CONNLAB_REDIS=new opens a Redis connection per request, as a redis.Redis()
made inside the view does; CONNLAB_REDIS=pool shares one redis-py
ConnectionPool per process, made at start-up. Run it with gunicorn
(app:app) or as a script, which starts Flask's development server with
threads, as the article's `flask run` / `app.run()` did.
"""

import os

import redis
from flask import Flask

REDIS_HOST = "127.0.0.1"
REDIS_PORT = int(os.environ["CONNLAB_REDIS_PORT"])
MODE = os.environ.get("CONNLAB_REDIS", "new")
if MODE not in ("new", "pool"):
    raise SystemExit("CONNLAB_REDIS must be new or pool, got %r" % MODE)

app = Flask(__name__)
pool = redis.ConnectionPool(host=REDIS_HOST, port=REDIS_PORT) if MODE == "pool" else None


@app.route("/test/<key>")
def test(key):
    if pool is None:
        # A client of its own: its connection is closed when the view ends
        # and the object is freed (redis-py's Connection.__del__).
        r = redis.Redis(host=REDIS_HOST, port=REDIS_PORT)
    else:
        r = redis.Redis(connection_pool=pool)
    r.set(key, 155030303)
    return r.get(key)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["CONNLAB_APP_PORT"]), threaded=True)

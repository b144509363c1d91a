#!/usr/bin/env python3
"""S3 (moto) on loopback for tests/net, with signature checking ON.

moto accepts any request unless INITIAL_NO_AUTH_ACTION_COUNT is set; then after that many
unauthenticated actions it checks SigV4 against the IAM users it knows. We spend those
actions creating an IAM user with an allow-all policy and an access key, create the bucket
with that key, and write {"port", "access_key", "secret_key", "bucket"} to --port-file.
Also serves EC2 IMDSv2 and ECS container credentials for that key on --metadata-port-file.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"  # before moto reads its settings

from moto.server import ThreadedMotoServer  # noqa: E402
import boto3  # noqa: E402

IMDS_TOKEN = "imds-token-123"
ECS_AUTH = "ecs-auth-456"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metadata_server(key, secret):
    creds = json.dumps({"Code": "Success", "AccessKeyId": key, "SecretAccessKey": secret, "Token": "",
                        "Expiration": "2999-01-01T00:00:00Z"}).encode()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, status, body=b""):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self):
            if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.send(200, IMDS_TOKEN.encode())
            self.send(400)

        def do_GET(self):
            if self.path.startswith("/latest/"):
                if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                    return self.send(401)  # IMDSv2 only: v1 requests are refused
                if self.path == "/latest/meta-data/iam/security-credentials/":
                    return self.send(200, b"test-role")
                if self.path == "/latest/meta-data/iam/security-credentials/test-role":
                    return self.send(200, creds)
            if self.path == "/ecs-creds":
                if self.headers.get("Authorization") != ECS_AUTH:
                    return self.send(403)
                return self.send(200, creds)
            self.send(404)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = "http://127.0.0.1:%d" % port
    anon = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bootstrap",
                aws_secret_access_key="bootstrap")
    iam = boto3.client("iam", **anon)
    iam.create_user(UserName="rc-test")
    iam.put_user_policy(UserName="rc-test", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="rc-test")["AccessKey"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
    s3.create_bucket(Bucket="rc-models")
    info = {"port": port, "access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"],
            "bucket": "rc-models", "metadata_port": metadata_server(key["AccessKeyId"], key["SecretAccessKey"]),
            "imds_token": IMDS_TOKEN, "ecs_auth": ECS_AUTH}
    with open(args.port_file + ".tmp", "w") as f:
        json.dump(info, f)
    os.rename(args.port_file + ".tmp", args.port_file)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

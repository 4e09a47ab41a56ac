#!/usr/bin/env bash
# An example Kubernetes stack for ragwatch. Not run in ragwatch's CI (no cluster there); adapt the
# names, the bucket, the registry and the kube context to yours.
set -euo pipefail
zenml integration install kubernetes s3 -y
zenml artifact-store register ragwatch-s3 --flavor=s3 --path=s3://my-bucket/ragwatch
zenml container-registry register ragwatch-registry --flavor=default --uri=registry.example.com/ragwatch
zenml image-builder register ragwatch-docker --flavor=local
zenml orchestrator register ragwatch-k8s --flavor=kubernetes \
  --kubernetes_context=my-context --kubernetes_namespace=ragwatch
zenml stack register ragwatch-k8s -o ragwatch-k8s -a ragwatch-s3 -c ragwatch-registry -i ragwatch-docker --set
# The Kubernetes orchestrator runs schedules natively:
#   python run.py schedule add --cron "0 6 * * *" --pipeline full

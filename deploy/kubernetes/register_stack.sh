#!/usr/bin/env bash
# An example Kubernetes stack for ragwatch. Not run here (no cluster, no real S3 on this machine);
# adapt the names, the bucket, the registry and the kube context to yours. The same components run
# locally against MariaDB, moto's S3 and the local Docker orchestrator: scripts/team_stack.sh and
# python -m benchmarks container_run.
set -euo pipefail
zenml integration install kubernetes -y   # the S3 packages are already in requirements/runtime-lock.txt
# S3 keys live in a ZenML secret (or use a service connector with an IAM role)
zenml secret create ragwatch-s3 --aws_access_key_id="$AWS_ACCESS_KEY_ID" --aws_secret_access_key="$AWS_SECRET_ACCESS_KEY"
zenml artifact-store register ragwatch-s3 --flavor=s3 --path=s3://my-bucket/ragwatch --authentication_secret=ragwatch-s3
zenml container-registry register ragwatch-registry --flavor=default --uri=registry.example.com/ragwatch
zenml image-builder register ragwatch-docker --flavor=local
zenml orchestrator register ragwatch-k8s --flavor=kubernetes \
  --kubernetes_context=my-context --kubernetes_namespace=ragwatch
zenml stack register ragwatch-k8s -o ragwatch-k8s -a ragwatch-s3 -c ragwatch-registry -i ragwatch-docker --set
# The parent image (Debian from debootstrap, Python, the runtime lock, the models), pushed:
#   deploy/image/build_parent_image.sh --push registry.example.com/ragwatch
# then put the printed name in deploy/kubernetes/zenml_run_config.yaml (parent_image).
# The Kubernetes orchestrator runs schedules natively:
#   python run.py schedule add --cron "0 6 * * *" --pipeline full

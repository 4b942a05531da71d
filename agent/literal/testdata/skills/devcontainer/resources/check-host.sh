#!/bin/bash
docker --version

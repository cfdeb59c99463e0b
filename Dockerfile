# Image of the API and the worker (docker-compose.yml runs it twice with different commands), on the
# current Node LTS line (package.json engines: 20, 22 and 24; the suite runs on 24 in .ci/run).
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The workflow code is bundled once here; start:worker loads dist/workflow-bundle.js (docs/operations.md "Workflow bundle").
RUN npm run build:workflows
USER node
EXPOSE 8080
CMD ["npm", "run", "start:api"]

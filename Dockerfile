# Image of the API and the worker (docker-compose.yml runs it twice with different commands).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
USER node
EXPOSE 8080
CMD ["npm", "run", "start:api"]
